-- The toy scheduler the scheduler specs (CPU and GPU) build: sched{ overrides } and the four
-- kinds they walk (KINDS).
local cuasync = require("cuasync")

local M = {}

function M.sched(o)
  local s = { name = "toy", m = 100, n = 70, k = 300, tile = { 16, 16 }, bk = 8, sms = 11 }
  for key, v in pairs(o) do s[key] = v end
  return cuasync.scheduler(s)
end

M.KINDS = {
  { kind = "persistent", raster = 3 },
  { kind = "stream_k" },
  { kind = "split_k", splits = 3, mode = "serial" },
  { kind = "split_k", splits = 4, mode = "reduce", sms = 12 },
}

return M
