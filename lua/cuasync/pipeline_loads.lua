-- The loads of a pipeline spec as the descriptors model/pipeline_plan.lua lays out: tensor maps
-- (with their derivation in words), bulk copies of stage_bytes, or cp.async loads
-- (model/cp_async_plan.lua); and the multicast keys checked against them.
local util = require("cuasync.util")
local tensormap = require("cuasync.tensormap")
local swizzle = require("cuasync.model.swizzle")
local plans = require("cuasync.model.pipeline_plan")
local cp_async = require("cuasync.model.cp_async_plan")

local M = {}
local LOAD_FIELDS = { map = true, name = true, boxes = true }

local function fail(msg) util.fail("pipeline", msg) end

local function list_text(t) return "{" .. table.concat(t, ", ") .. "}" end

-- A tensor map as a load descriptor (model/pipeline_plan.lua), with the derivation in words.
local function describe_map(name, tm, boxes)
  local d = { name = name, map = tm, bytes = tm.box_bytes, smem = tm.smem_bytes, boxes = boxes, dtype = tm.dtype,
              elem_bytes = tm.elem_bytes, swizzle = tm.swizzle, mode = tm.mode }
  d.align = swizzle.repeat_bytes(tm.swizzle)   -- a stage buffer starts on the pattern's repeat
  if tm.mode == "im2col" then
    d.what = ("im2col %s: %d pixels x %d channels x %d B"):format(tm.dtype, tm.pixels, tm.channels, tm.elem_bytes)
  else
    local f = {}
    for i = 1, #tm.box do f[i] = tostring(tm.box[i]) end
    d.what = ("tensormap %s box %s x %s B"):format(tm.dtype, list_text(f), tostring(tm.elem_bytes))
    if tm.smem_bytes > tm.box_bytes then
      d.padded = ("rows of %d B are padded to the %s swizzle span in shared memory (%d B there), but the transaction counts the %d data bytes"):format(
        tm.box[1] * tm.elem_bytes, tm.swizzle, tm.smem_bytes, tm.box_bytes)
    end
    for i = 1, #tm.box do
      if tm.dims[i] % tm.box[i] ~= 0 then
        d.edge = ("boxes hang over the tensor's edge in dimension %d (%d is not a multiple of %d): the whole box still counts, the out-of-bounds fill completes the transaction too"):format(
          i, tm.dims[i], tm.box[i])
        break
      end
    end
    if boxes > 1 then
      d.split = ("a tile %d boxes wide, loaded by %d TMA instructions"):format(boxes, boxes)
    end
  end
  return d
end

-- The load descriptors, and whether they are cp.async loads.
function M.of(spec)
  local out, seen, cp = {}, {}, false
  if spec.loads ~= nil then
    if spec.stage_bytes ~= nil then fail("give loads or stage_bytes, not both") end
    util.list("pipeline", "loads", spec.loads)
    if #spec.loads == 0 then fail("loads must list at least one tensor map") end
    if #spec.loads > 16 then fail(("loads lists %d tensor maps; at most 16"):format(#spec.loads)) end
    local first_cp, first_map
    for i, l in ipairs(spec.loads) do
      local tm, name, boxes = l, "load" .. i, 1
      if cp_async.is_load(l) and not tensormap.is(l) then
        out[i] = cp_async.load(i, l)
        name = out[i].name
        first_cp = first_cp or i
      elseif not tensormap.is(l) then
        if type(l) ~= "table" then
          fail(("loads[%d] must be a cuasync.tensormap, { map = tm, name = ..., boxes = n } or { cp_async = bytes, vector = 16 } (got %s)"):format(i, util.describe(l)))
        end
        util.known_fields("pipeline", l, LOAD_FIELDS, ("loads[%d]"):format(i))
        tm = l.map
        if not tensormap.is(tm) then
          fail(("loads[%d].map must be a cuasync.tensormap (got %s)"):format(i, util.describe(tm)))
        end
        if l.name ~= nil then
          util.kind("pipeline", ("loads[%d].name"):format(i), l.name, "string")
          if not l.name:match("^[%a_][%w_]*$") then
            fail(("loads[%d].name must be a C identifier (got %s)"):format(i, util.describe(l.name)))
          end
          name = l.name
        end
        boxes = util.int_in("pipeline", ("loads[%d].boxes"):format(i), l.boxes or 1, 1, 64)
      end
      if seen[name] then fail(("loads[%d] and loads[%d] are both named '%s'"):format(seen[name], i, name)) end
      seen[name] = i
      if not out[i] then
        out[i] = describe_map(name, tm, boxes)
        first_map = first_map or i
      end
    end
    if first_cp and first_map then
      fail(("loads mixes cp.async loads (loads[%d]) and tensor maps (loads[%d]): a TMA stage completes when its tx bytes land, a cp.async stage when its producer threads arrive; cuasync plans one kind per pipeline (two pipelines, or TMA for both)"):format(
           first_cp, first_map))
    end
    cp = first_cp ~= nil
  elseif spec.stage_bytes ~= nil then
    local b = util.int_in("pipeline", "stage_bytes", spec.stage_bytes, 16, plans.MAX_TX)
    if b % 16 ~= 0 then fail(("stage_bytes = %d is not a multiple of 16 (a bulk copy moves multiples of 16 bytes)"):format(b)) end
    out[1] = { name = "bulk", bytes = b, smem = b, boxes = 1, align = 16, what = ("bulk copy of %d B"):format(b) }
  else
    fail("loads (tensor maps, one box each per stage, or cp.async loads { cp_async = bytes }) or stage_bytes (bulk copies) is required")
  end
  return out, cp
end

function M.multicast(spec, loads, cluster)
  if spec.multicast == nil then return end
  util.kind("pipeline", "multicast", spec.multicast, "table")
  if spec.cluster == nil then fail("multicast needs a cluster (cluster = { x, y, z })") end
  for key, dim in pairs(spec.multicast) do
    local hit
    for _, l in ipairs(loads) do
      if l.map ~= nil and (l.map == key or l.name == key) then hit = l end
    end
    if not hit then
      fail(("multicast key %s is not one of the loads (key by the tensor map or the load's name)"):format(util.describe(key)))
    end
    if plans.DIMS[dim] == nil then
      fail(('multicast[%s] must be "x", "y" or "z": the cluster dimension the load is shared along (got %s)'):format(
           hit.name, util.describe(dim)))
    end
    local n = cluster[plans.DIMS[dim]]
    if n < 2 then
      fail(("multicast[%s] = %q but the cluster has extent 1 along %s: nothing to share"):format(hit.name, dim, dim))
    end
    if hit.mode == "im2col" then fail(("multicast[%s]: cuasync multicasts tiled maps only"):format(hit.name)) end
    hit.multicast = dim
  end
end

return M
