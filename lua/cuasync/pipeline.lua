-- Pipelines as Lua objects: one plan is the single source of truth for a kernel's byte counts,
-- its shared-memory layout, its launch and a CPU model of its protocol.
--   local P = cuasync.pipeline{ name = "main", stages = 4, loads = { tmA, tmB },
--                               producer = { warps = 1 }, consumer = { warps = 4 } }
--   P.tx_bytes, P.smem_bytes, P.block, P:layout(), P:explain(), P:header(), P:defines(),
--   P:check(dev), P:program{ file = ... }, P:launch_config{ grid = n }, P:simulate{}, P:mutate{}
-- A load is a tensor map, or { map = tm, name = "A", boxes = n } (n boxes per stage, e.g. a tile
-- wider than the swizzle span). stage_bytes = n instead of loads: bulk copies of n bytes a stage.
-- scratch = n: n bytes of the kernel's own after the barriers (an epilogue's staging buffer),
-- counted in smem_bytes and in check(); pipe.scratch() on the device.
-- The arithmetic lives in model/pipeline_plan.lua, the protocol in model/pipeline_protocol.lua.
local util = require("cuasync.util")
local device = require("cuasync.device")
local program = require("cuasync.program")
local tensormap = require("cuasync.tensormap")
local R = require("cuasync.model.tensormap_rules")
local rules = require("cuasync.model.launch_rules")
local swizzle = require("cuasync.model.swizzle")
local plans = require("cuasync.model.pipeline_plan")
local protocol = require("cuasync.model.pipeline_protocol")

local M = {}
local Pipeline = {}
Pipeline.__index = Pipeline

local FIELDS = { name = true, stages = true, loads = true, stage_bytes = true, producer = true, consumer = true,
                 cluster = true, multicast = true, scratch = true, release = true }
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

local function loads_of(spec)
  local out, seen = {}, {}
  if spec.loads ~= nil then
    if spec.stage_bytes ~= nil then fail("give loads or stage_bytes, not both") end
    util.list("pipeline", "loads", spec.loads)
    if #spec.loads == 0 then fail("loads must list at least one tensor map") end
    if #spec.loads > 16 then fail(("loads lists %d tensor maps; at most 16"):format(#spec.loads)) end
    for i, l in ipairs(spec.loads) do
      local tm, name, boxes = l, "load" .. i, 1
      if not tensormap.is(l) then
        if type(l) ~= "table" then
          fail(("loads[%d] must be a cuasync.tensormap or { map = tm, name = ..., boxes = n } (got %s)"):format(i, util.describe(l)))
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
      out[i] = describe_map(name, tm, boxes)
    end
  elseif spec.stage_bytes ~= nil then
    local b = util.int_in("pipeline", "stage_bytes", spec.stage_bytes, 16, plans.MAX_TX)
    if b % 16 ~= 0 then fail(("stage_bytes = %d is not a multiple of 16 (a bulk copy moves multiples of 16 bytes)"):format(b)) end
    out[1] = { name = "bulk", bytes = b, smem = b, boxes = 1, align = 16, what = ("bulk copy of %d B"):format(b) }
  else
    fail("loads (tensor maps, one box each per stage) or stage_bytes (bulk copies) is required")
  end
  return out
end

local function multicast_of(spec, loads, cluster)
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

function M.new(spec)
  util.kind("pipeline", "argument", spec, "table")
  util.known_fields("pipeline", spec, FIELDS)
  local name = spec.name or "main"
  util.kind("pipeline", "name", name, "string")
  if not name:match("^[%a_][%w_]*$") or #name > 64 then
    fail(("name must be a C identifier of at most 64 characters (it names the generated struct and header; got %s)"):format(
         util.describe(name)))
  end
  local stages = util.int_in("pipeline", "stages", spec.stages, 1, plans.MAX_STAGES)
  local loads = loads_of(spec)
  local roles = plans.roles(spec.producer, spec.consumer, spec.release)
  local cluster, size = plans.cluster(spec.cluster)
  multicast_of(spec, loads, cluster)
  local scratch = util.int_in("pipeline", "scratch", spec.scratch or 0, 0, 2 ^ 20)
  local plan = plans.derive{ name = name, stages = stages, loads = loads, roles = roles, cluster = cluster,
                             cluster_size = size, scratch = scratch }
  plan.cluster_given = spec.cluster ~= nil
  plans.check_layout(plan)
  return setmetatable(plan, Pipeline)
end

function Pipeline:layout() return plans.layout(self) end
function Pipeline:explain() return plans.explain(self) end
function Pipeline:header() return plans.header(self) end
function Pipeline:defines() return plans.defines(self) end
function Pipeline:__tostring()
  return ("cuasync.pipeline '%s': %d stages, tx %d B, smem %d B, block %d%s"):format(self.name, self.stages,
    self.tx_bytes, self.smem_bytes, self.block, self.mutation and " (mutated)" or "")
end

-- P:check(dev): raises naming the limit the plan breaks on this device; returns the plan.
function Pipeline:check(dev)
  if dev == nil then dev = device.current() end
  if type(dev) ~= "table" or type(dev.smem_optin) ~= "number" then
    fail(("check's argument must be a cuasync device (got %s)"):format(util.describe(dev)))
  end
  local optin, reserved = dev.smem_optin, dev.reserved_smem_per_block or 0
  if self.smem_bytes > optin then
    local per_stage = self.pitch + 16
    fail(("pipeline '%s' needs %d bytes of dynamic shared memory (%d stages x %d + barriers and slack) but %s allows %d per block (smem_optin; the system reserves %d more per block): %d bytes over; each stage takes %d, so at most %d stages fit"):format(
      self.name, self.smem_bytes, self.stages, self.pitch, dev.name or "the device", optin, reserved,
      self.smem_bytes - optin, per_stage, math.max(0, math.floor((optin - self.slack) / per_stage))))
  end
  if dev.max_threads_per_block and self.block > dev.max_threads_per_block then
    fail(("pipeline '%s' needs %d threads per block; the device allows %d"):format(self.name, self.block,
         dev.max_threads_per_block))
  end
  if self.cluster_size > 1 then
    if dev.cluster == false then fail(("pipeline '%s' has a cluster but %s has no cluster launch"):format(self.name, dev.name)) end
    if self.cluster_size > rules.PORTABLE_CLUSTER then
      fail(("pipeline '%s': cluster of %d blocks is above the portable %d"):format(self.name, self.cluster_size,
           rules.PORTABLE_CLUSTER))
    end
  end
  for _, l in ipairs(self.loads) do
    if l.map then R.device_supports(R.dtype(l.dtype), l.dtype, dev.cc, dev.name) end
  end
  plans.check_layout(self)
  return self
end

-- P:program{ source = s | file = f, ... }: a cuasync.program with the config header bound as
-- <cuasync/pipelines/NAME.cuh> and the defines added; its kernels check their tensor-map
-- arguments and launch config against this plan when prepared.
function Pipeline:program(spec)
  if self.mutation then fail(("pipeline '%s' is a mutated plan: it is for :simulate only"):format(self.name)) end
  util.kind("pipeline.program", "argument", spec, "table")
  local s = {}
  for k, v in pairs(spec) do s[k] = v end
  local headers = {}
  for k, v in pairs(util.kind("pipeline.program", "headers", spec.headers or {}, "table")) do headers[k] = v end
  local hname = ("cuasync/pipelines/%s.cuh"):format(self.name)
  if headers[hname] then util.fail("pipeline.program", ("headers already has %s: the pipeline writes it"):format(hname)) end
  headers[hname] = self:header()
  s.headers = headers
  local defines = {}
  for k, v in pairs(util.kind("pipeline.program", "defines", spec.defines or {}, "table")) do defines[k] = v end
  for k, v in pairs(self:defines()) do
    if defines[k] ~= nil then util.fail("pipeline.program", ("defines.%s is set by the pipeline (%s)"):format(k, tostring(v))) end
    defines[k] = v
  end
  s.defines = defines
  -- a pipeline's kernels are watched unless told otherwise: a hang becomes a post-mortem
  if s.watchdog == nil then s.watchdog = true end
  local plan = self
  return program.new(s, {
    plan = plan,   -- what the watchdog's post-mortem names barriers and stages from
    check_config = function(kernel_name, c) M.config_check(plan, kernel_name, c) end,
    map_check = function(kernel_name, i, j) return M.map_check(plan, kernel_name, i, j) end,
  })
end

-- P:launch_config{ grid = ..., stream = ... }: block, smem and cluster filled from the plan.
function Pipeline:launch_config(cfg)
  util.kind("pipeline.launch_config", "argument", cfg, "table")
  local out = {}
  for k, v in pairs(cfg) do
    if k == "block" or k == "smem" or k == "cluster" then
      util.fail("pipeline.launch_config", ("%s is filled by the pipeline (%s); do not give it"):format(k,
        k == "block" and self.block or k == "smem" and self.smem_bytes or "the plan's cluster"))
    end
    out[k] = v
  end
  if out.grid == nil then util.fail("pipeline.launch_config", "grid is required") end
  out.block, out.smem = self.block, self.smem_bytes
  if self.cluster_given then out.cluster = { self.cluster[1], self.cluster[2], self.cluster[3] } end
  return out
end

function Pipeline:simulate(o)
  return protocol.simulate(self, o, self.mutation)
end

-- P:mutate{ tx_delta = n | consumer_arrivals = n | parity_flip = true | producer_exits_at = i }:
-- the same plan with a planted fault, for :simulate to find.
function Pipeline:mutate(m)
  protocol.check_mutation(self, m)
  local c = {}
  for k, v in pairs(self) do c[k] = v end
  c.mutation = {}
  for k, v in pairs(self.mutation or {}) do c.mutation[k] = v end
  for k, v in pairs(m) do c.mutation[k] = v end
  return setmetatable(c, Pipeline)
end

-- Used by kernel:prepare: the checks a kernel built from P:program makes before its first launch.
-- Returns a wrapper for the tensor-map setter of kernel parameter i (the j-th tensor map), or nil.
function M.map_check(P, kernel_name, i, j)
  local l = P.loads[j]
  if not l or not l.map then return nil end
  local last
  return function(v)
    if v == last then return end
    if not tensormap.is(v) then
      util.fail("launch", ("argument %d of '%s' is a raw CUtensorMap; pipeline '%s' needs the cuasync.tensormap to check its box against load %s"):format(
        i, kernel_name, P.name, l.name))
    end
    if v.box_bytes ~= l.bytes or v.dtype ~= l.dtype then
      util.fail("launch", ("tensormap argument %d brings %d bytes per box of %s; pipeline '%s' was built for %d of %s (load %s, stage tx %d)"):format(
        i, v.box_bytes, v.dtype, P.name, l.bytes, l.dtype, l.name, P.tx_bytes))
    end
    last = v
  end
end

-- The launch config a kernel built from P:program must have: its block and at least its smem.
function M.config_check(P, kernel_name, c)
  local threads = c.block[1] * c.block[2] * c.block[3]
  if threads ~= P.block then
    util.fail("launch", ("kernel '%s' launches %d threads per block but pipeline '%s' has roles for %d (use P:launch_config)"):format(
      kernel_name, threads, P.name, P.block))
  end
  if c.smem < P.smem_bytes then
    util.fail("launch", ("kernel '%s' launches with %d bytes of dynamic shared memory but pipeline '%s' lays out %d (use P:launch_config)"):format(
      kernel_name, c.smem, P.name, P.smem_bytes))
  end
end

M.Pipeline = Pipeline
return M
