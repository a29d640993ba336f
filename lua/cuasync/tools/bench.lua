-- cuasync.bench(fn, { warmup = 3, reps = 20, stream = s }) -> { median, min, max, mean, times } in ms,
-- each rep timed between device events recorded around it. fn is called with no arguments, so a
-- prepared launch can be passed as it is.
local streams = require("cuasync.stream")
local device = require("cuasync.device")
local util = require("cuasync.util")
local capture = require("cuasync.capture")

local M = {}

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

function M.bench(fn, opts)
  util.kind("bench", "fn", fn, "function")
  capture.refuse("bench", "a benchmark times work with events and waits for it on the host (bench G:launch from outside)")
  opts = opts or {}
  util.kind("bench", "opts", opts, "table")
  util.known_fields("bench", opts, { warmup = true, reps = true, stream = true }, 2)
  local warmup = util.count("bench", "warmup", opts.warmup or 3, true)
  local reps = util.count("bench", "reps", opts.reps or 20)
  local stream = opts.stream
  streams.handle(stream)   -- a closed or foreign stream is refused before any work
  device.current()
  for _ = 1, warmup do fn() end
  local events = {}
  for i = 0, reps do events[i] = streams.event() end
  events[0]:record(stream)
  for i = 1, reps do
    fn()
    events[i]:record(stream)
  end
  events[reps]:synchronize()
  local times, sum, lo, hi = {}, 0, math.huge, -math.huge
  for i = 1, reps do
    times[i] = events[i - 1]:elapsed(events[i])
    sum = sum + times[i]
    lo, hi = math.min(lo, times[i]), math.max(hi, times[i])
  end
  for i = 0, reps do events[i]:close() end
  return { median = M.median(times), min = lo, max = hi, mean = sum / reps, times = times }
end

-- cuasync.bench_rounds(variants, { rounds = 5, reps = 10, warmup = 2 }): time every variant's
-- v.run in interleaved rounds (each round: every variant, one bench each), so that clock and
-- thermal drift fall on all alike; sets v.times (each round's median) and v.ms (their median).
function M.rounds(variants, opts)
  util.kind("bench_rounds", "variants", variants, "table")
  opts = opts or {}
  util.kind("bench_rounds", "opts", opts, "table")
  util.known_fields("bench_rounds", opts, { rounds = true, reps = true, warmup = true }, 2)
  local rounds = util.count("bench_rounds", "rounds", opts.rounds or 5)
  if opts.reps ~= nil then util.count("bench_rounds", "reps", opts.reps) end
  if opts.warmup ~= nil then util.count("bench_rounds", "warmup", opts.warmup, true) end
  util.list("bench_rounds", "variants", variants)
  for i, v in ipairs(variants) do
    if type(v) ~= "table" or type(v.run) ~= "function" then
      util.fail("bench_rounds", ("variants[%d].run must be a function"):format(i))
    end
    v.times = {}
  end
  for _ = 1, rounds do
    for _, v in ipairs(variants) do
      v.times[#v.times + 1] = M.bench(v.run, { warmup = opts.warmup or 2, reps = opts.reps or 10 }).median
    end
  end
  for _, v in ipairs(variants) do v.ms = M.median(v.times) end
  return variants
end

return M
