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
local HEADER, SLOT = layout.HEADER, layout.SLOT
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

-- A slot's clock: ring 0's events carry %globaltimer (ns) and %clock64 (cycles) together; a
-- pipeline's events carry cycles alone, mapped to ns from the nearest pair at a rate (ns a cycle)
-- taken only from pairs at least SPAN_NS apart (%globaltimer moves in steps: two pairs a few
-- hundred cycles apart say nothing of the rate): the segment's, else the slot's, else `fallback`
-- (the launch's, from every slot that spans enough). Times come out as int64 cdata: a Lua number
-- at 1.7e18 ns steps in 256 ns (model/timeline.lua subtracts first).
M.SPAN_NS = 20000

local function span_rate(lo, hi)
  local dg = tonumber(hi.g - lo.g)
  if dg < M.SPAN_NS or hi.c <= lo.c then return nil end
  return dg / tonumber(hi.c - lo.c)
end

local function clock_of(pairs_, fallback)
  table.sort(pairs_, function(x, y) return x.c < y.c end)
  local n = #pairs_
  local rate = n >= 2 and span_rate(pairs_[1], pairs_[n]) or fallback
  local function at(c)
    if n == 0 then return nil end
    local lo = pairs_[1]
    for k = 2, n do if pairs_[k].c <= c then lo = pairs_[k] else break end end
    local hi
    for k = 1, n do if pairs_[k].c > lo.c then hi = pairs_[k] break end end
    local r = rate
    if hi and hi.c > c and c >= lo.c then r = span_rate(lo, hi) or rate end
    return lo.g + math.floor(tonumber(ffi.cast("int64_t", c - lo.c)) * r + 0.5)
  end
  return at, rate
end

-- The launch's rate: the median of the slots' own (those whose pairs span SPAN_NS), else a 1.5
-- GHz SM (the H200 under load).
local function launch_rate(all)
  local rates = {}
  for _, p in ipairs(all) do
    table.sort(p, function(x, y) return x.c < y.c end)
    local r = #p >= 2 and span_rate(p[1], p[#p])
    if r then rates[#rates + 1] = r end
  end
  if #rates == 0 then return 1 / 1.5 end
  table.sort(rates)
  return rates[math.ceil(#rates / 2)]
end

-- One recorded event as the raw events model/timeline.lua reads: a wait is two (its begin and
-- its end, dur later), the rest one; ns(c) maps a cycle count to ns.
-- own: an event of ring 0, stamped in ns when it was recorded (a wait: at its end; one the
-- watchdog ended: at its begin); else a pipeline's, stamped in cycles at its begin.
local function decode(e, plan, out, ns, rate, own)
  local a = e.a
  local kind = KINDS[bit.band(bit.rshift(a, 24), 15)] or "unknown"
  local dur = bit.band(a, 0x40000000) ~= 0 and e.dur ~= 0xFFFFFFFF and math.floor(e.dur * rate + 0.5) or e.dur
  local t
  if not own then t = ns(e.t)
  elseif kind == "wait" and e.dur ~= 0xFFFFFFFF then t = ffi.cast("int64_t", e.t) - dur
  else t = ffi.cast("int64_t", e.t) end
  if t == nil then return end   -- cycles with no pair to map them (cannot happen: begin_block is one)
  local ev = { t = t, kind = kind, role = ROLES[bit.band(bit.rshift(a, 28), 3)] }
  if kind == "sync" then return end
  if kind == "mark" or kind == "range_begin" or kind == "range_end" then ev.id = e.b
  elseif kind == "block_begin" then ev.sm = e.b
  else
    ev.barrier, ev.stage = barrier_of(plan, a)
    ev.iteration = e.b
    if ev.stage == nil and plan and bit.band(a, 0x40000) ~= 0 then ev.stage = e.b % plan.stages end
    if kind == "issue" or kind == "arm" then ev.bytes = plan and plan.tx_bytes or nil end
  end
  ev.seq = #out
  if kind ~= "wait" then out[#out + 1] = ev return end
  ev.kind, ev.parity = "wait_begin", bit.band(bit.rshift(a, 19), 1)
  if e.dur == 0xFFFFFFFF then out[#out + 1] = ev return end   -- the watchdog ended it: never completed
  local fin = {}
  for k, v in pairs(ev) do fin[k] = v end
  fin.kind, fin.seq = "wait_end", #out + 1
  fin.t = t + dur
  out[#out + 1], out[#out + 2] = ev, fin
end

-- Time order; at one time, the order decoded (a wait's begin before its end).
local function earlier(x, y)
  if x.t ~= y.t then return x.t < y.t end
  return x.seq < y.seq
end

-- The linear index of the block a slot belongs to (the device's choice of traced blocks).
local function block_of(o, s, wpb)
  local ord = math.floor(s / wpb)
  if type(o.blocks) == "table" then return o.blocks[ord + 1] end
  return ord * o.blocks
end

-- The events of module mod's last traced launch: raw (model/timeline.lua's input). Ring 0 holds
-- its newest cap events (count says how many were written); rings 1 and 2 hold the events of
-- their role's newest cap / 2 iterations (2 a pipeline iteration), those of this launch's epoch.
local function read(mod)
  local t = mod.trace
  if t.reset_epoch ~= t.epoch then
    util.fail("trace", ("the trace buffer of kernel '%s' was reset for a launch that did not start (the launch after '%s' failed): launch it again, then read"):format(
      t.kernel, t.kernel))
  end
  local plan = mod.program.hooks and mod.program.hooks.plan
  local o = t.options
  local cap = o.events
  local bytes = layout.bytes(t.slots, cap)
  local host = ffi.new("uint8_t[?]", bytes)
  native.check(C.cuasync_mem_dtoh(host, t.dev, bytes, errbuf, ERRLEN))
  local h = ffi.cast("cuasync_trace_header *", host)
  -- (the header's epoch word is not written: trace/buffer.lua; each event carries its own)
  if h.magic ~= layout.MAGIC or h.slots ~= t.slots or h.cap ~= cap then
    util.fail("trace", ("the trace of kernel '%s' is not what its launch set up (magic 0x%x, slots %d of %d, cap %d of %d): was the module's buffer launched from elsewhere?"):format(
      t.kernel, h.magic, h.slots, t.slots, h.cap, cap))
  end
  local sl = ffi.cast("cuasync_trace_slot *", host + HEADER)
  local ev = ffi.cast("cuasync_trace_event *", host + HEADER + SLOT * t.slots)
  local raw = { kernel = t.kernel, cap = cap, lost = 0, dropped = h.dropped, slots = {}, names = o.names,
                config = t.config, plan = plan and plan.name or nil }
  local gx, gy = t.config.grid[1], t.config.grid[2]
  local wpb = math.ceil(t.config.block[1] * t.config.block[2] * t.config.block[3] / 32)
  -- ring 0 of every slot first: its events, and the clock pairs they carry
  local owns, pairs_all = {}, {}
  for s = 0, t.slots - 1 do
    local n, base = sl[s].count, s * layout.RINGS * cap
    local own, pairs_ = {}, {}
    for i = math.max(0, n - cap), n - 1 do
      local e = ev[base + i % cap]
      if e.epoch == t.epoch then
        own[#own + 1] = e
        -- a clock pair: not a wait the watchdog ended (all ones), nor a scoped range's open (aux 0:
        -- its time held as ns only, trace.cuh's range)
        if e.dur ~= 0xFFFFFFFF and e.aux ~= 0 then pairs_[#pairs_ + 1] = { g = ffi.cast("int64_t", e.t), c = e.aux + 0ULL } end
      end
    end
    owns[s], pairs_all[s + 1] = own, pairs_
  end
  local fallback = launch_rate(pairs_all)
  for s = 0, t.slots - 1 do
    local events, lost = {}, 0
    local n = sl[s].count
    local base = s * layout.RINGS * cap
    local own = owns[s]
    local ns, rate = clock_of(pairs_all[s + 1], fallback)
    for _, e in ipairs(own) do decode(e, plan, events, ns, rate, true) end
    lost = math.max(0, n - cap)
    for r = 1, layout.RINGS - 1 do
      local last = -1
      for j = 0, cap - 1 do
        local e = ev[base + r * cap + j]
        if e.epoch == t.epoch then
          decode(e, plan, events, ns, rate)
          last = math.max(last, e.b)
        end
      end
      lost = lost + math.max(0, 2 * (last + 1) - cap)   -- 2 events an iteration were written
    end
    if #events > 0 then
      table.sort(events, earlier)
      local linear = block_of(o, s, wpb)
      raw.slots[#raw.slots + 1] = { block = { linear % gx, math.floor(linear / gx) % gy, math.floor(linear / (gx * gy)) },
        linear = linear, sm = n > 0 and sl[s].sm or nil, cluster_rank = n > 0 and sl[s].rank or 0, warp = s % wpb,
        count = #events + lost, lost = lost, events = events }
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
  if t.missing then
    util.fail("trace", ("kernel '%s' records nothing: its source includes no cuasync device header (trace.cuh comes with <cuasync/watchdog.cuh> and every header that waits)"):format(k.name))
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
