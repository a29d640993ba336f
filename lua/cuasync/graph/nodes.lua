-- The nodes of an instantiated graph, edited in place (no re-instantiation): G.nodes[i] (in the
-- order the function enqueued them) or G.nodes["name"] (g:name("name") before the call), each
-- with :set(...) — a kernel's arguments, a fill's byte (and destination), a copy's buffers —
-- and :enable(bool). Checked before the driver sees them; the node keeps what it now reads
-- (held.lua), and a node taken before a G:update refuses edits (its graph is gone).
local ffi = require("ffi")
local native = require("cuasync.native")
local util = require("cuasync.util")
local handle = require("cuasync.handle")
local signature = require("cuasync.signature")
local buffer = require("cuasync.buffer")
local held = require("cuasync.graph.held")
local kernel = require("cuasync.kernel")
require("cuasync.cdef.graph")

local C, errbuf, ERRLEN = native.C, native.errbuf, native.ERRLEN
local buffer_t, host_buffer_t = buffer.buffer_t, buffer.host_buffer_t

local M = {}
local GraphNode = {}
GraphNode.__index = GraphNode

-- The kinds cuGraphNodeSetEnabled takes (the driver's words: kernel, memset and memcpy nodes).
local TOGGLE = { kernel = true, memset = true, memcpy = true }

-- The node still belongs to G's current graph, G is open, and the driver named it at capture.
local function usable(self, where)
  local G, info = self.graph, self.info
  if G.h.open == 0 then util.fail(where, handle.dead("graph", G.h)) end
  if G.rec ~= self.rec then
    util.fail(where, ("%s belongs to graph '%s' as it was before G:update: take it again from G.nodes"):format(
      held.node_name(info), G.name))
  end
  if not info.node then
    util.fail(where, ("%s cannot be edited: the driver gave no node for it at capture (%s)"):format(
      held.node_name(info), info.why_no_node or "unknown"))
  end
  return G, info
end

local function set_kernel(self, n, ...)
  local G, info = usable(self, "graph.node.set")
  local k = info.kernel
  if k.generation ~= native.state.generation then
    util.fail("graph.node.set", ("%s: its kernel belongs to the CUDA context cuasync.reset() ended"):format(held.node_name(info)))
  end
  local count = #k.params
  if n ~= count then
    util.fail("graph.node.set", ("%s takes %d argument%s (%s), got %d"):format(held.node_name(info), count,
      count == 1 and "" or "s", k.sig, n))
  end
  if not self.params then   -- slots of its own: the captured runner's slots go on with later launches
    self.slots, self.setters = {}, {}
    self.params = ffi.new("void *[?]", math.max(count, 1))
    local at = { where = "graph.node.set", prefix = held.node_name(info) .. ": ", rec = G.rec }
    local maps = 0
    for i, p in ipairs(k.params) do
      self.slots[i] = signature.slot(p)
      self.params[i - 1] = self.slots[i]
      if p.kind == "tensormap" then maps = maps + 1 end
      -- as k:prepare packs them: a plan's tensor-map check first (a map of another box would
      -- arm the wrong byte count and hang the replay)
      self.setters[i] = kernel.setter(k, i, p, self.slots[i], maps, at)
    end
  end
  local args = { ... }
  for i = 1, count do self.setters[i](args[i]) end
  native.check(C.cuasync_graph_exec_kernel(G.h.exec, info.node, k.fn, info.lc, self.params, k.name, errbuf, ERRLEN))
  info.args = args
  return G, info
end

-- A buffer of the captured kind (device or pinned host) holding bytes at offset.
local function memory(info, what, v, host, offset)
  local want = host and host_buffer_t or buffer_t
  if not ffi.istype(want, v) then
    util.fail("graph.node.set", ("%s: %s must be a %s, as captured (got %s)"):format(held.node_name(info), what,
      host and "cuasync.host_alloc buffer" or "device buffer", util.describe(v)))
  end
  if (host and v.ptr == nil) or (not host and v.ptr == 0) then
    util.fail("graph.node.set", ("%s: %s is closed"):format(held.node_name(info), what))
  end
  if offset + info.bytes > tonumber(v.nbytes) then
    util.fail("graph.node.set", ("%s: %s holds %d bytes but the node copies %d at offset %d"):format(
      held.node_name(info), what, tonumber(v.nbytes), info.bytes, offset))
  end
  return host and ffi.cast("uint64_t", v.ptr) or v.ptr
end

local function set_memset(self, byte, dst)
  local G, info = usable(self, "graph.node.set")
  if not util.is_integer(byte) or byte < 0 or byte > 255 then
    util.fail("graph.node.set", ("%s: byte must be an integer 0..255 (got %s)"):format(held.node_name(info), util.describe(byte)))
  end
  dst = dst or info.dst
  local p = memory(info, "the destination", dst, false, info.dst_offset)
  native.check(C.cuasync_graph_exec_memset(G.h.exec, info.node, p + info.dst_offset, byte, info.bytes, errbuf, ERRLEN))
  info.value, info.dst = byte, dst
  return G, info
end

local function set_memcpy(self, dst, src)
  local G, info = usable(self, "graph.node.set")
  local dst_host, src_host = ffi.istype(host_buffer_t, info.dst), ffi.istype(host_buffer_t, info.src)
  local d = memory(info, "the destination", dst, dst_host, info.dst_offset)
  local s = memory(info, "the source", src, src_host, info.src_offset)
  native.check(C.cuasync_graph_exec_memcpy(G.h.exec, info.node, d + info.dst_offset, dst_host and 1 or 0,
    s + info.src_offset, src_host and 1 or 0, info.bytes, errbuf, ERRLEN))
  info.dst, info.src = dst, src
  return G, info
end

-- node:set(...): kernel: all its arguments, as k:launch takes them; fill: (byte[, buffer]);
-- copy: (dst, src), buffers of the captured kinds. Returns the node.
function GraphNode:set(...)
  local kind = self.info.kind
  local G, info
  if kind == "kernel" then G, info = set_kernel(self, select("#", ...), ...)
  elseif kind == "memset" then G, info = set_memset(self, ...)
  elseif kind == "memcpy" then G, info = set_memcpy(self, ...)
  else
    util.fail("graph.node.set", ("%s has no arguments to set (a conditional node's body changes with G:update(fn))"):format(
      held.node_name(self.info)))
  end
  -- the new arguments were checked live just now: held from here on, a close bumps the epoch, so
  -- the next launch need not walk the whole graph
  info.refs = held.refs(info)
  return self
end

-- node:enable(bool): the node runs (true) or is skipped (false) at the next launches.
function GraphNode:enable(on)
  if type(on) ~= "boolean" then
    util.fail("graph.node.enable", ("on must be a boolean (got %s)"):format(util.describe(on)))
  end
  local info = self.info
  if not TOGGLE[info.kind] then
    util.fail("graph.node.enable", ("%s cannot be enabled or disabled: the driver toggles only kernel, fill (memset) and copy (memcpy) nodes"):format(
      held.node_name(info)))
  end
  local G = usable(self, "graph.node.enable")
  native.check(C.cuasync_graph_exec_enable(G.h.exec, info.node, on and 1 or 0, errbuf, ERRLEN))
  info.enabled = on
  return self
end

function GraphNode:__tostring()
  return ("cuasync.graph %s of graph '%s'"):format(held.node_name(self.info), self.graph.name)
end

-- G's node by number (1..#top-level nodes) or by name; a bad index or name is refused by name.
function M.get(G, key)
  local rec = G.rec
  local list, info = rec.list
  if util.is_integer(key) then
    if key < 1 or key > #list then
      util.fail("graph.nodes", ("node %s is out of range: graph '%s' has %d node%s (1..%d)"):format(
        util.describe(key), G.name, #list, #list == 1 and "" or "s", #list))
    end
    info = list[key]
  elseif type(key) == "string" then
    info = rec.named[key]
    if not info then
      util.fail("graph.nodes", ("graph '%s' has no node named %s (named: %s; name one with g:name(\"...\") before its call)"):format(
        G.name, util.describe(key), next(rec.named) and util.sorted_keys(rec.named) or "none"))
    end
    if info.depth > 0 then
      util.fail("graph.nodes", ("node %s is inside a conditional body: edit it with G:update(fn)"):format(util.describe(key)))
    end
  else
    util.fail("graph.nodes", ("a node is taken by number or name (got %s)"):format(util.describe(key)))
  end
  rec.objects = rec.objects or {}
  local n = rec.objects[info]
  if not n then
    n = setmetatable({ graph = G, info = info, rec = rec }, GraphNode)
    rec.objects[info] = n
  end
  return n
end

-- The counts table G.nodes ({ count, kernel = n, ... }) answering G.nodes[i] and G.nodes.name.
local COUNTED = { count = true, kernel = true, memcpy = true, memset = true, host = true, graph = true, empty = true,
                  wait_event = true, event_record = true, ext_semas_signal = true, ext_semas_wait = true,
                  mem_alloc = true, mem_free = true, batch_mem_op = true, conditional = true }
function M.indexed(G, counts)
  return setmetatable(counts, { __index = function(_, k)
    if COUNTED[k] then return nil end   -- a kind with no node
    return M.get(G, k)
  end })
end

M.COUNTED = COUNTED   -- names G.nodes keeps for its counts: g:name refuses them
M.GraphNode = GraphNode
util.methods(GraphNode, "graph.node", "node")
return M
