-- cuasync.bench(fn, { warmup = 3, reps = 20, stream = s }) -> { median, min, max, mean, times } in ms,
-- each rep timed between device events recorded around it. fn is called with no arguments, so a
-- prepared launch can be passed as it is.
local streams = require("cuasync.stream")
local device = require("cuasync.device")
local util = require("cuasync.util")
local capture = require("cuasync.capture")

local now_ns = streams.now_ns

local M = { MAX_SETTLE_RUNS = 10000 }

-- The median of a list of numbers (the list is left as it was).
function M.median(t)
  util.list("median", "t", t)
  if #t == 0 then util.fail("median", "t is empty (the median of no numbers)") end
  local s = {}
  for i = 1, #t do
    if type(t[i]) ~= "number" or t[i] ~= t[i] then
      util.fail("median", ("t[%d] must be a number (got %s)"):format(i, util.describe(t[i])))
    end
    s[i] = t[i]
  end
  table.sort(s)
  local n = #s
  return n % 2 == 1 and s[(n + 1) / 2] or (s[n / 2] + s[n / 2 + 1]) / 2
end

-- A flush (opts.before) runs before each rep, outside its timed interval: each rep then has
-- its own pair of events.
local function device_reps(fn, reps, stream, before)
  local times = {}
  if before then
    local a, b = streams.event(), streams.event()
    for i = 1, reps do
      before()
      a:record(stream)
      fn()
      b:record(stream)
      b:synchronize()
      times[i] = a:elapsed(b)
    end
    a:close(); b:close()
    return times
  end
  local events = {}
  for i = 0, reps do events[i] = streams.event() end
  events[0]:record(stream)
  for i = 1, reps do
    fn()
    events[i]:record(stream)
  end
  events[reps]:synchronize()
  for i = 1, reps do times[i] = events[i - 1]:elapsed(events[i]) end
  for i = 0, reps do events[i]:close() end
  return times
end

-- Host work timed with the host clock (a host sweep: compile times, a CPU model).
local function host_reps(fn, reps, before)
  local times = {}
  for i = 1, reps do
    if before then before() end
    local t0 = now_ns()
    fn()
    times[i] = (now_ns() - t0) / 1e6
  end
  return times
end

function M.bench(fn, opts)
  util.kind("bench", "fn", fn, "function")
  opts = opts or {}
  util.kind("bench", "opts", opts, "table")
  util.known_fields("bench", opts, { warmup = true, reps = true, stream = true, before = true, host = true }, 2)
  local warmup = util.count("bench", "warmup", opts.warmup or 3, true)
  local reps = util.count("bench", "reps", opts.reps or 20)
  if opts.before ~= nil then util.kind("bench", "before", opts.before, "function") end
  local times
  if opts.host then
    for _ = 1, warmup do fn() end
    times = host_reps(fn, reps, opts.before)
  else
    capture.refuse("bench", "a benchmark times work with events and waits for it on the host (bench G:launch from outside)")
    local stream = opts.stream
    streams.handle(stream)   -- a closed or foreign stream is refused before any work
    device.current()
    for _ = 1, warmup do fn() end
    times = device_reps(fn, reps, stream, opts.before)
  end
  local sum, lo, hi = 0, math.huge, -math.huge
  for i = 1, reps do
    sum = sum + times[i]
    lo, hi = math.min(lo, times[i]), math.max(hi, times[i])
  end
  return { median = M.median(times), min = lo, max = hi, mean = sum / reps, times = times }
end

-- cuasync.bench_rounds(variants, { rounds = 5, reps = 10, warmup = 2 }): time every variant's
-- v.run in interleaved rounds (each round: every variant, one bench each), so that clock and
-- thermal drift fall on all alike; sets v.times (each round's median) and v.ms (their median).
-- Options for sweeps: host = true (the host clock), before = fn (run before each rep, untimed:
-- an L2 flush), early_exit = { after = r, factor = f, best = cost }: after r rounds a variant
-- whose cost so far (median ms per unit of v.work, 1 without it: bytes or flops, so variants
-- doing different work compare fairly) is over f times the best (of those that are not
-- v.baseline, or `best` from earlier work) leaves the rounds with v.slow = true and its partial figure;
-- keep_going = true: a variant whose run raises leaves the rounds with v.error (its message) and
-- no v.ms, and the others go on; observe = fn(v): called after each variant's bench of a round,
-- untimed (the sweep samples the GPU's clocks and power there, while they are the variant's);
-- settle_ms = ms: before each variant's timed reps, as many untimed runs as fill that long (from
-- its last round's time, or one timed probe), queued back to back with the timed ones, so that
-- a power-capped chip's clocks settle at what this variant draws, not at what the one before it
-- left (at most MAX_SETTLE_RUNS).
function M.rounds(variants, opts)
  util.kind("bench_rounds", "variants", variants, "table")
  opts = opts or {}
  util.kind("bench_rounds", "opts", opts, "table")
  util.known_fields("bench_rounds", opts, { rounds = true, reps = true, warmup = true, host = true, before = true,
                                            early_exit = true, keep_going = true, observe = true, settle_ms = true }, 2)
  -- by its own name, and before keep_going could take the refusal for a variant's failure
  if not opts.host then
    capture.refuse("bench_rounds", "its rounds time work with events and wait for it on the host (time G:launch from outside)")
  end
  local rounds = util.count("bench_rounds", "rounds", opts.rounds or 5)
  if opts.reps ~= nil then util.count("bench_rounds", "reps", opts.reps) end
  if opts.warmup ~= nil then util.count("bench_rounds", "warmup", opts.warmup, true) end
  local ex = opts.early_exit
  if ex ~= nil then
    util.kind("bench_rounds", "early_exit", ex, "table")
    util.known_fields("bench_rounds", ex, { after = true, factor = true, best = true }, "early_exit")
    util.count("bench_rounds", "early_exit.after", ex.after)
    if type(ex.factor) ~= "number" or ex.factor <= 1 then
      util.fail("bench_rounds", ("early_exit.factor must be a number over 1 (got %s)"):format(util.describe(ex.factor)))
    end
  end
  if opts.keep_going ~= nil and type(opts.keep_going) ~= "boolean" then
    util.fail("bench_rounds", ("keep_going must be a boolean (got %s)"):format(util.describe(opts.keep_going)))
  end
  if opts.observe ~= nil then util.kind("bench_rounds", "observe", opts.observe, "function") end
  local sm = opts.settle_ms
  if sm ~= nil and (type(sm) ~= "number" or sm ~= sm or sm < 0 or sm > 60000) then
    util.fail("bench_rounds", ("settle_ms must be a number of ms in 0..60000 (got %s)"):format(util.describe(sm)))
  end
  util.list("bench_rounds", "variants", variants)
  for i, v in ipairs(variants) do
    if type(v) ~= "table" or type(v.run) ~= "function" then
      util.fail("bench_rounds", ("variants[%d].run must be a function"):format(i))
    end
    v.times, v.slow, v.error = {}, nil, nil
  end
  local settle = opts.settle_ms or 0
  local function one(v)
    local b = { warmup = opts.warmup or 2, reps = opts.reps or 10, host = opts.host, before = opts.before }
    if settle > 0 then   -- untimed launches enough for settle_ms, back to back with the timed ones
      local est = v.times[#v.times] or M.bench(v.run, { warmup = 0, reps = 1, host = opts.host }).median
      b.warmup = math.max(b.warmup, math.min(M.MAX_SETTLE_RUNS, math.ceil(settle / math.max(est, 1e-3))))
    end
    return M.bench(v.run, b).median
  end
  for round = 1, rounds do
    for _, v in ipairs(variants) do
      local ran = not (v.slow or v.error)
      if not ran then   -- left the rounds
      elseif opts.keep_going then   -- a variant that raises leaves the rounds (v.error), the rest go on
        local ok, res = pcall(one, v)
        if ok then v.times[#v.times + 1] = res else v.error = res end
      else
        v.times[#v.times + 1] = one(v)
      end
      if ran and opts.observe and not v.error then opts.observe(v) end
    end
    if ex and round == ex.after and round < rounds then
      local best = ex.best
      local function cost(v) return M.median(v.times) / (v.work or 1) end
      for _, v in ipairs(variants) do
        if not v.baseline and not v.error and (not best or cost(v) < best) then best = cost(v) end
      end
      for _, v in ipairs(variants) do
        if not v.baseline and not v.error and cost(v) > ex.factor * best then v.slow = true end
      end
    end
  end
  for _, v in ipairs(variants) do v.ms = not v.error and M.median(v.times) or nil end
  return variants
end

-- loaded on first use (init.lua's LAZY), so named here: a failure inside (no driver) names the call
util.public[M.bench], util.public[M.rounds], util.public[M.median] = "bench", "bench_rounds", "median"

return M
