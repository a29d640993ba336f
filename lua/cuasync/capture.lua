-- The stream capture cuasync.graph has open, if any (one at a time: graphs do not nest). Core
-- modules ask it before work that cannot be captured and refuse that work by name, so that no
-- driver call invalidates the capture; a launch or copy on the capturing stream is counted as the
-- graph's next node, and what it needs is kept alive with the graph.
-- The state lives in the Lua registry, not in this module: a handle's methods are bound once per
-- process (ffi.metatype), so a second instance of this module (a test runner that reloads
-- modules) must see the same capture.
local ffi = require("ffi")
local util = require("cuasync.util")
local native = require("cuasync.native")
require("cuasync.cdef.graph")

local C, errbuf, ERRLEN = native.C, native.errbuf, native.ERRLEN

local M = {}

local registry = debug.getregistry()
local state = registry["cuasync.capture"]
if not state then
  state = { active = nil, deferred = {} }
  registry["cuasync.capture"] = state
end
-- What live graphs keep (buffers, host buffers, module handles, tensor maps; weak keys), and a
-- count bumped when one of them is closed or re-pointed: G:launch compares it with the count it
-- last checked at, so a launch walks its graph's resources only after such a change.
state.held = state.held or setmetatable({}, { __mode = "k" })
state.epoch = state.epoch or 0
-- state.active: the open capture's record { handle, count, keep, kernels, list }, or nil
M.state = state

-- obj is kept by a graph: closing or re-pointing it makes graphs check themselves at launch.
function M.hold(obj) state.held[obj] = true end
-- obj was closed or re-pointed (handle.lua, tensormap.lua).
function M.changed(obj)
  if state.held[obj] then state.epoch = state.epoch + 1 end
end

local INSIDE = "inside cuasync.graph's function"

function M.open(rec) state.active = rec end
function M.close() state.active = nil end

-- Raise "cuasync.<where>: cannot run inside cuasync.graph's function: <why>" while a capture is open.
function M.refuse(where, why)
  if state.active then util.fail(where, ("cannot run %s: %s"):format(INSIDE, why)) end
end

-- Work enqueued on stream handle h (nil: the default stream) while a capture is open: refused
-- unless h is the capturing stream; else counted as a node. what: "the copy", or a kernel's
-- name (kernel = true). keep: what the node reads, kept alive with the graph. info: the node's
-- record (kind and what an edit needs), appended to the list of the graph being captured (the
-- top level, or a conditional body). Returns the node's number (1-based, in the order the
-- function enqueued), or nil when no capture is open.
function M.enqueue(where, what, h, keep, kernel, info)
  local a = state.active
  if not a then return nil end
  if h == nil or h ~= a.handle then
    local why = a.outer and a.outer[h] and "the stream of an enclosing graph: a conditional body captures only the stream given to its function"
      or "a graph captures only the stream given to the function"
    util.fail(where, ("%s runs on %s %s: %s (pass it: stream = s)"):format(
      kernel and ("kernel '" .. what .. "'") or what, h == nil and "the default stream" or "a stream that is not capturing", INSIDE, why))
  end
  a.count = a.count + 1
  if keep ~= nil then a.keep[#a.keep + 1] = keep end
  info = info or { kind = kernel and "kernel" or "memcpy" }
  info.label, a.next_label = a.next_label, nil
  info.depth = a.depth or 0
  local list = a.list
  list[#list + 1] = info
  if info.label then a.named[info.label] = info end
  return #list
end

-- After the driver call that added the node M.enqueue counted: remember the driver's node (for
-- edits of the instantiated graph). A driver before CUDA 12.3 cannot say: the node then has
-- none, and an edit says why.
local tail_graph, tail_node = ffi.new("CUgraph[1]"), ffi.new("CUgraphNode[1]")
function M.added()
  local a = state.active
  if not a then return end
  local info = a.list[#a.list]
  if a.no_tail then info.why_no_node = a.no_tail return end
  local rc = C.cuasync_graph_capture_tail(a.handle, tail_graph, tail_node, errbuf, ERRLEN)
  if rc ~= 0 then
    local _, err = pcall(native.check, rc)
    a.no_tail = tostring(err)
    info.why_no_node = a.no_tail
    return
  end
  info.node = tail_node[0] ~= nil and tail_node[0] or nil
end

-- A kernel launched into the open capture: a node; a watched one is remembered with its node.
function M.kernel(name, h, keep, watch, info)
  local node = M.enqueue("launch", name, h, keep, true, info)
  if watch then
    local a = state.active
    a.kernels[#a.kernels + 1] = { name = name, node = node, watch = watch }
  end
end

-- -- Conditions ----------------------------------------------------------------------------------
-- A condition handle belongs to the capture (rec) that made it and the graph level it was made
-- in; a kernel parameter of type cond takes one only inside that capture.
local Condition = {}
Condition.__index = Condition
function Condition:__tostring()
  return ("cuasync.graph condition '%s' of graph '%s'"):format(self.name, self.rec.name or "graph")
end
function M.condition(rec, handle, graph, name, default)
  return setmetatable({ rec = rec, handle = handle, graph = graph, name = name, default = default }, Condition)
end
function M.is_condition(v) return getmetatable(v) == Condition end

-- While a capture is open, queue fn(arg) (a resource's release: freeing memory or unloading a
-- module is not allowed while a stream captures, and the GC may run a finaliser at any time)
-- and return true; else return false. M.flush runs the queue once the capture has ended.
function M.defer(fn, arg)
  if not state.active then return false end
  state.deferred[#state.deferred + 1] = { fn, arg }
  return true
end

-- Run the releases deferred during the capture that just ended; the first failure is raised
-- after all have run.
function M.flush()
  local list = state.deferred
  state.deferred = {}
  local first
  for _, d in ipairs(list) do
    local ok, err = pcall(d[1], d[2])
    if not ok and first == nil then first = err end
  end
  if first ~= nil then error(first, 0) end
end

return M
