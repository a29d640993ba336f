-- The timeline, host side. A program built with trace (cuasync.program{ trace = true | { blocks
-- = "all" | n | { list }, events = n, names = { [id] = "name" } } }, P:program the same) compiles
-- kernels-src/cuasync/trace.cuh's records: every sited wait, copy issue, arm and release, and
-- the user's marks, per warp, into rings in device memory. Here: the options, the buffer (made
-- for each launch configuration, reset before each launch), and reading it back after a
-- synchronize into the events of model/timeline.lua (k:trace() -> T: T:summary(), T:perfetto(p),
-- T:svg(p)). Nothing of this is compiled or run for a program without trace.
-- The parts: trace/layout.lua (the buffer's layout), trace/buffer.lua (made, reset, launched),
-- trace/read.lua (read back, named), model/timeline.lua (spans, flows, the stall table),
-- trace/perfetto.lua and trace/svg.lua (the writers).
local util = require("cuasync.util")
local timeline = require("cuasync.model.timeline")
local buffer = require("cuasync.trace.buffer")
local read = require("cuasync.trace.read")
local perfetto = require("cuasync.trace.perfetto")
local svg = require("cuasync.trace.svg")

local M = { DEFAULT_STRIDE = 8, DEFAULT_EVENTS = 1024, MIN_EVENTS = 16, MAX_EVENTS = 1048576, MAX_LIST = 64 }
local WHERE = "program"

-- -- Options -------------------------------------------------------------------------------------

-- While set (M.force, the sweep's trace runs), a program that says nothing of trace is traced.
local forced = nil

-- The program's `trace` field as nil (off) or { blocks, events, names }.
function M.options(v)
  if v == nil and forced then return forced end
  if v == nil or v == false then return nil end
  if type(v) == "cdata" then util.fail(WHERE, "trace is a NULL pointer or a cdata: give true, false or { blocks, events, names }") end
  local o = { blocks = M.DEFAULT_STRIDE, events = M.DEFAULT_EVENTS, names = {} }
  if v == true then return o end
  if type(v) ~= "table" then
    util.fail(WHERE, ('trace must be true, false or { blocks = "all" | n | { list }, events = n, names = { [id] = "name" } } (got %s)'):format(
      util.describe(v)))
  end
  util.known_fields(WHERE, v, { blocks = true, events = true, names = true }, "trace")
  local b = v.blocks
  if b == "all" then o.blocks = 1
  elseif type(b) == "number" then o.blocks = util.int_in(WHERE, "trace.blocks (1 in n blocks)", b, 1, 2 ^ 31)
  elseif type(b) == "table" then
    util.list(WHERE, "trace.blocks", b)
    if #b == 0 or #b > M.MAX_LIST then
      util.fail(WHERE, ("trace.blocks lists 1 to %d blocks (got %d)"):format(M.MAX_LIST, #b))
    end
    for i, x in ipairs(b) do util.int_in(WHERE, ("trace.blocks[%d] (a linear block index)"):format(i), x, 0, 2 ^ 31 - 1) end
    o.blocks = b
  elseif b ~= nil then
    util.fail(WHERE, ('trace.blocks must be "all", n (1 block in n) or a list of block indices (got %s)'):format(util.describe(b)))
  end
  if v.events ~= nil then
    o.events = util.int_in(WHERE, "trace.events (the ring of each warp; smaller keeps too little of a pipeline)", v.events,
                           M.MIN_EVENTS, M.MAX_EVENTS)
  end
  if v.names ~= nil then
    util.kind(WHERE, "trace.names", v.names, "table")
    for id, name in pairs(v.names) do
      util.int_in(WHERE, "trace.names key (a mark's id)", id, 0, 2 ^ 32 - 1)
      util.kind(WHERE, ("trace.names[%s]"):format(tostring(id)), name, "string")
      o.names[id] = name
    end
  end
  return o
end

-- The defines a traced program is compiled with.
function M.defines(o)
  local d = { CUASYNC_TRACE = 1, CUASYNC_TRACE_EVENTS = o.events }
  if type(o.blocks) == "table" then
    local t = {}
    for i, x in ipairs(o.blocks) do t[i] = ("%du"):format(x) end
    d.CUASYNC_TRACE_LIST = table.concat(t, ",")
  else
    d.CUASYNC_TRACE_STRIDE = o.blocks
  end
  return d
end

-- Run fn with every program that does not say otherwise traced (options v, as the field's);
-- returns fn's results. The sweep's trace = "best" | "all" builds its variants again this way.
function M.force(v, fn)
  local o = M.options(v)
  local before = forced
  forced = o
  local res = { n = 0 }
  local function keep(ok, ...) res.n = select("#", ...) for i = 1, res.n do res[i] = select(i, ...) end return ok end
  local ok = keep(pcall(fn))
  forced = before
  if not ok then error(res[1], 0) end
  return unpack(res, 1, res.n)
end

local Trace = {}
Trace.__index = Trace
function Trace:summary() return timeline.summary(self) end
function Trace:text() return timeline.summary_text(self) end
function Trace:perfetto(path) return perfetto.write(self, path) end
function Trace:svg(path, opts) return svg.write(self, path, opts) end

-- k:trace() -> T (model/timeline.lua's build, with the writers as methods).
function M.read(k)
  local T = timeline.build(read.raw(k))
  return setmetatable(T, Trace)
end

-- The timeline of the last traced launch in this process (any kernel), or nil.
function M.last()
  local l = buffer.last_launch
  if not (l and l.module) then return nil end
  return M.read(l)
end

M.attach, M.prepare, M.raw, M.recent = buffer.attach, buffer.prepare, read.raw, read.recent

util.methods(Trace, "trace", "T")
M.Trace = Trace
return M
