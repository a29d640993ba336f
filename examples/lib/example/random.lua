-- example.random: a fresh seed for cuasync's random fill, from the clock, so that no run reuses the
-- data of the last: buf:fill_random{ dtype = "u32", seed = random.seed() } (a seed gives the same
-- data on every run: pass one to repeat a run's inputs). Two calls never give the same seed.
local cuasync = require("cuasync")

local M = {}
local calls = 0

function M.seed()
  calls = calls + 1
  return (tonumber(cuasync.now_ns() % 2 ^ 40) * 256 + calls) % 2 ^ 53
end

return M
