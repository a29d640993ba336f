-- cuasync.bench(fn, { warmup = 3, reps = 20, stream = s }) -> { median, min, max, mean, times } in ms,
-- each rep timed between device events recorded around it. fn is called with no arguments, so a
-- prepared launch can be passed as it is.
local streams = require("cuasync.stream")
local device = require("cuasync.device")
local util = require("cuasync.util")

local M = {}

function M.bench(fn, opts)
  util.kind("bench", "fn", fn, "function", 2)
  opts = opts or {}
  util.kind("bench", "opts", opts, "table", 2)
  util.known_fields("bench", opts, { warmup = true, reps = true, stream = true }, 2)
  local warmup = util.count("bench", "warmup", opts.warmup or 3, 2, true)
  local reps = util.count("bench", "reps", opts.reps or 20, 2)
  local stream = opts.stream
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
  local times, sorted, sum = {}, {}, 0
  for i = 1, reps do
    times[i] = events[i - 1]:elapsed(events[i])
    sorted[i] = times[i]
    sum = sum + times[i]
  end
  for i = 0, reps do events[i]:close() end
  table.sort(sorted)
  local mid = math.floor((reps + 1) / 2)
  local median = reps % 2 == 1 and sorted[mid] or (sorted[mid] + sorted[mid + 1]) / 2
  return { median = median, min = sorted[1], max = sorted[reps], mean = sum / reps, times = times }
end

return M
