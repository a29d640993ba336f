-- example.random: fresh random data for the examples, xorshift64* seeded from the clock, so no run
-- reuses the data of the last. fill(ptr, words) writes `words` uint64 values at ptr. (It stays an
-- example helper: the library's own random fill, buf:fill_random in DESIGN.md, is not written yet.)
local ffi = require("ffi")
local bit = require("bit")

local M = {}

function M.fill(ptr, words)
  local w = ffi.cast("uint64_t *", ptr)
  local x = ffi.new("uint64_t", (os.time() * 2654435761) % 2 ^ 31 + 0x9E3779B97F4A7C15ULL)
  for i = 0, words - 1 do
    x = bit.bxor(x, bit.rshift(x, 12)); x = bit.bxor(x, bit.lshift(x, 25)); x = bit.bxor(x, bit.rshift(x, 27))
    w[i] = x * 0x2545F4914F6CDD1DULL
  end
end

return M
