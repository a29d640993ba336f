-- Reading a traced module's buffer back (after its launch is done) into the events of
-- model/timeline.lua's input, named by the plan (full[2], empty[0]) where the module has one;
-- and the post-mortem's view: the last events of each warp of a hung block.
local ffi = require("ffi")
local bit = require("bit")
local native = require("cuasync.native")
local util = require("cuasync.util")
local layout = require("cuasync.trace.layout")
require("cuasync.cdef.memory")
require("cuasync.cdef.event")

local C, errbuf, ERRLEN = native.C, native.errbuf, native.ERRLEN
local HEADER, SLOT, EVENT = layout.HEADER, layout.SLOT, layout.EVENT
local KINDS, ROLES = layout.KINDS, layout.ROLES

local M = {}

-- The barrier of an event: its name in the plan's ring ("full", 2), or nil and its address.
local function barrier_of(plan, a)
  local addr, relative = bit.band(a, 0x3FFFF), bit.band(a, 0x40000) ~= 0
  if relative and plan then
    for _, which in ipairs({ "full", "empty" }) do
      local first = plan[which .. "_offset"]
      if addr >= first and addr < first + 8 * plan.stages and (addr - first) % 8 == 0 then return which, (addr - first) / 8 end
    end
  end
  if addr == 0 then return nil end
  return ("mbarrier@0x%x"):format(addr), nil
end

local function decode(e, plan)
  local a = e.a
  local kind = KINDS[bit.band(bit.rshift(a, 24), 15)] or "unknown"
  -- t stays a 64-bit integer: a Lua number at 1.7e18 ns steps in 256 ns (model/timeline.lua subtracts first)
  local ev = { t = e.t, kind = kind, role = ROLES[bit.band(bit.rshift(a, 28), 3)] }
  if kind == "mark" or kind == "range_begin" or kind == "range_end" then ev.id = e.b
  elseif kind == "block_begin" then ev.sm = e.b
  else
    ev.barrier, ev.stage = barrier_of(plan, a)
    ev.iteration = e.b
    if kind == "wait_begin" or kind == "wait_end" then ev.parity = bit.band(bit.rshift(a, 19), 1) end
    if ev.stage == nil and ev.iteration and plan and bit.band(a, 0x40000) ~= 0 then ev.stage = e.b % plan.stages end
    if kind == "issue" or kind == "arm" then ev.bytes = plan and plan.tx_bytes or nil end
  end
  return ev
end

-- The events of module mod's last traced launch: raw (model/timeline.lua's input).
local function read(mod)
  local t = mod.trace
  local plan = mod.program.hooks and mod.program.hooks.plan
  local o = t.options
  local bytes = layout.bytes(t.slots, o.events)
  local host = ffi.new("uint8_t[?]", bytes)
  native.check(C.cuasync_mem_dtoh(host, t.dev, bytes, errbuf, ERRLEN))
  local h = ffi.cast("cuasync_trace_header *", host)
  if h.magic ~= layout.MAGIC or h.slots ~= t.slots or h.cap ~= o.events then
    util.fail("trace", ("the trace of kernel '%s' is not what its launch set up (magic 0x%x, slots %d of %d, cap %d of %d): was the module's buffer launched from elsewhere?"):format(
      t.kernel, h.magic, h.slots, t.slots, h.cap, o.events))
  end
  local sl = ffi.cast("cuasync_trace_slot *", host + HEADER)
  local ev = ffi.cast("cuasync_trace_event *", host + HEADER + SLOT * t.slots)
  local raw = { kernel = t.kernel, cap = o.events, lost = 0, dropped = h.dropped, slots = {}, names = o.names,
                config = t.config, plan = plan and plan.name or nil }
  local gx, gy = t.config.grid[1], t.config.grid[2]
  local wpb = math.ceil(t.config.block[1] * t.config.block[2] * t.config.block[3] / 32)
  for s = 0, t.slots - 1 do
    local n = sl[s].count
    if n > 0 then
      local linear = sl[s].block
      local keep, lost = math.min(n, o.events), math.max(0, n - o.events)
      local events = {}
      for i = n - keep, n - 1 do events[#events + 1] = decode(ev[s * o.events + i % o.events], plan) end
      raw.slots[#raw.slots + 1] = { block = { linear % gx, math.floor(linear / gx) % gy, math.floor(linear / (gx * gy)) },
        linear = linear, sm = sl[s].sm, cluster_rank = sl[s].rank, warp = s % wpb, count = n, lost = lost, events = events }
      raw.lost = raw.lost + lost
    end
  end
  return raw
end

-- The module's last traced launch, read back (after a synchronize: refused before it); k is a
-- kernel (or { module, name }).
function M.raw(k)
  local t = k.module.trace
  if not t then
    util.fail("trace", ("kernel '%s' was compiled without trace: build its program with trace = true (cuasync.program{ trace = ... } or P:program{ trace = ... })"):format(k.name))
  end
  if not t.kernel then util.fail("trace", ("kernel '%s' has no traced launch to read: launch it first"):format(k.name)) end
  if t.generation ~= native.state.generation then util.fail("trace", "the trace belongs to a CUDA context that cuasync.reset() ended") end
  local done = ffi.new("int[1]")
  native.check(C.cuasync_event_query(t.event, done, errbuf, ERRLEN))
  if done[0] == 0 then
    util.fail("trace", ("kernel '%s' may still be running: read its trace after a synchronize (cuasync.synchronize(), or the stream's)"):format(t.kernel))
  end
  return read(k.module)
end

local function describe(e, t_end)
  local what = e.kind:gsub("_", " ")
  if e.barrier then what = what .. " " .. e.barrier .. (e.stage and ("[%d]"):format(e.stage) or "") end
  if e.iteration and e.kind ~= "mark" then what = what .. (" · it %d"):format(e.iteration) end
  if e.id then what = what .. (" %d"):format(e.id) end
  return ("%s %.3f ms before the end"):format(what, tonumber(t_end - e.t) / 1e6)
end

-- The last n events of each traced warp of the hung block (the watchdog's post-mortem adds
-- them: what each role did just before), or nil where the block was not traced.
function M.recent(mod, block, n)
  local t = mod and mod.trace
  if not (t and t.kernel and t.generation == native.state.generation) then return nil end
  local ok, raw = pcall(read, mod)
  if not ok then return nil end
  local g = t.config.grid
  local linear = block[1] + g[1] * (block[2] + g[2] * block[3])
  local out, t_end = {}, nil
  for _, sl in ipairs(raw.slots) do
    for _, e in ipairs(sl.events) do if t_end == nil or e.t > t_end then t_end = e.t end end
  end
  for _, sl in ipairs(raw.slots) do
    if sl.linear == linear then
      local parts, role = {}, nil
      for i = math.max(1, #sl.events - n + 1), #sl.events do
        parts[#parts + 1] = describe(sl.events[i], t_end)
        role = role or sl.events[i].role
      end
      out[#out + 1] = ("warp %d%s: %s"):format(sl.warp, role and (" (" .. role .. ")") or "", table.concat(parts, "; "))
    end
  end
  return #out > 0 and out or nil
end

return M
