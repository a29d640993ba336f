-- What a graph keeps alive, and the check that it is all still there at G:launch. Every buffer,
-- host buffer, module and tensor map its nodes read is referenced from the graph (so the GC
-- cannot free it) and marked held (capture.hold): closing one, or re-pointing a held tensor map
-- (tm:replace_address), bumps capture.state.epoch. A launch compares one number with the epoch it
-- last checked at, and walks its nodes only when they differ; a dead or moved resource is then
-- refused by node and parameter, before the driver replays into freed or stale memory.
local ffi = require("ffi")
local util = require("cuasync.util")
local capture = require("cuasync.capture")
local buffer = require("cuasync.buffer")
local tensormap = require("cuasync.tensormap")

local M = {}
local cstate = capture.state
local buffer_t, host_buffer_t = buffer.buffer_t, buffer.host_buffer_t

-- "node 3 (kernel 'axpy', named 'relax')": how messages name a node of the list it is in.
function M.node_name(info, i)
  local what = info.kind == "kernel" and ("kernel '%s'"):format(info.kernel.name)
    or info.kind == "memset" and "fill" or info.kind == "memcpy" and "copy" or (info.type or "") .. " conditional"
  local where = (info.depth or 0) > 0 and " in a conditional body" or ""
  return ("node %s%s (%s%s)"):format(tostring(i or info.index or "?"), where, what,
    info.label and (", named '" .. info.label .. "'") or "")
end

local function memory_ref(out, v, param)
  if ffi.istype(buffer_t, v) then out[#out + 1] = { obj = v, what = "buffer", param = param }
  elseif ffi.istype(host_buffer_t, v) then out[#out + 1] = { obj = v, what = "host buffer", param = param } end
end

-- The resources node info reads: { obj, what, param[, address] } each.
function M.refs(info)
  local out = {}
  if info.kind == "kernel" then
    local k = info.kernel
    out[1] = { obj = k.module.handle, what = "module", param = ("its module (program %s)"):format(k.module.name) }
    for i, p in ipairs(info.args and k.params or {}) do
      local v = info.args[i]
      local param = ("argument %d (%s)"):format(i, p.kind)
      if p.kind == "ptr" then memory_ref(out, v, param)
      elseif p.kind == "tensormap" and tensormap.is(v) then
        out[#out + 1] = { obj = v, what = "tensormap", param = param, address = v.address }
        if v.buffer then memory_ref(out, v.buffer, param .. "'s buffer") end
      end
    end
  elseif info.kind == "memcpy" then
    memory_ref(out, info.dst, "the destination")
    memory_ref(out, info.src, "the source")
  elseif info.kind == "memset" then
    memory_ref(out, info.dst, "the destination")
  end
  for _, r in ipairs(out) do capture.hold(r.obj) end
  return out
end

-- Give every node of a captured list (and of conditional bodies in it) its refs and number.
function M.adopt(list)
  for i, info in ipairs(list) do
    info.index = i
    info.refs = M.refs(info)
    for _, body in ipairs(info.bodies or {}) do M.adopt(body) end
  end
end

local function dead(r)
  local o = r.obj
  if r.what == "buffer" then return o.ptr == 0 and "the buffer was closed after capture; a replay would touch freed memory" end
  if r.what == "host buffer" then return o.ptr == nil and "the host buffer was closed after capture; a replay would copy through freed memory" end
  if r.what == "module" then return o.loaded == 0 and "the module was unloaded after capture; the node's kernel is gone" end
  if r.what == "tensormap" and o.address ~= r.address then
    return ("the tensor map's address changed since capture (tm:replace_address: 0x%x then, 0x%x now), and the graph holds the map as captured"):format(
      tonumber(r.address), tonumber(o.address))
  end
  return false
end

local function walk(G, list)
  for i, info in ipairs(list) do
    for _, r in ipairs(info.refs or {}) do
      local why = dead(r)
      if why then
        local fix = (info.depth or 0) > 0 and "capture it again with G:update(fn)"
          or ("capture it again with G:update(fn), or give the node live ones with G.nodes[%d]:set(...)"):format(i)
        util.fail("graph.launch", ("graph '%s' %s %s: %s (%s)"):format(G.name, M.node_name(info, i), r.param, why, fix))
      end
    end
    for _, body in ipairs(info.bodies or {}) do walk(G, body) end
  end
end

-- At G:launch: nothing to do unless something held was closed or moved since the last check.
function M.check(G)
  if G.epoch == cstate.epoch then return end
  walk(G, G.rec.list)
  G.epoch = cstate.epoch
end

return M
