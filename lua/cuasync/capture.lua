-- The stream capture cuasync.graph has open, if any (one at a time: graphs do not nest). Core
-- modules ask it before work that cannot be captured and refuse that work by name, so that no
-- driver call invalidates the capture; a launch or copy on the capturing stream is counted as the
-- graph's next node, and what it needs is kept alive with the graph.
-- The state lives in the Lua registry, not in this module: a handle's methods are bound once per
-- process (ffi.metatype), so a second instance of this module (a test runner that reloads
-- modules) must see the same capture.
local util = require("cuasync.util")

local M = {}

local registry = debug.getregistry()
local state = registry["cuasync.capture"]
if not state then
  state = { active = nil, deferred = {} }
  registry["cuasync.capture"] = state
end
-- state.active: the open capture's record { handle, count, keep, kernels }, or nil
M.state = state

local INSIDE = "inside cuasync.graph's function"

function M.open(rec) state.active = rec end
function M.close() state.active = nil end

-- Raise "cuasync.<where>: cannot run inside cuasync.graph's function: <why>" while a capture is open.
function M.refuse(where, why)
  if state.active then util.fail(where, ("cannot run %s: %s"):format(INSIDE, why)) end
end

-- Work enqueued on stream handle h (nil: the default stream) while a capture is open: refused
-- unless h is the capturing stream; else counted as a node. what: "the copy", or a kernel's
-- name (kernel = true). keep: what the node reads, kept alive with the graph. Returns the node's
-- number (1-based, in the order the function enqueued), or nil when no capture is open.
function M.enqueue(where, what, h, keep, kernel)
  local a = state.active
  if not a then return nil end
  if h == nil or h ~= a.handle then
    util.fail(where, ("%s runs on %s %s: a graph captures only the stream given to the function (pass it: stream = s)"):format(
      kernel and ("kernel '" .. what .. "'") or what, h == nil and "the default stream" or "a stream that is not capturing", INSIDE))
  end
  a.count = a.count + 1
  if keep ~= nil then a.keep[#a.keep + 1] = keep end
  return a.count
end

-- A kernel launched into the open capture: a node; a watched one is remembered with its node.
function M.kernel(name, h, keep, watch)
  local node = M.enqueue("launch", name, h, keep, true)
  if watch then
    local a = state.active
    a.kernels[#a.kernels + 1] = { name = name, node = node, watch = watch }
  end
end

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
