-- A seeded random generator for the sweep's strategies (Park-Miller: every product is exact in a
-- double), so that a seed names the same choices on every machine and LuaJIT build. Every seed
-- in 0..MAX_SEED names a sequence of its own. One generator (multiplier 48271) has MOD - 1
-- states, three fewer than the seeds: seed s in 1..MOD-2 starts it at s and seed 0 at MOD - 1,
-- as they always did; the three largest seeds, MOD - 1 .. 2^31 (which once reduced mod MOD onto
-- the draws of 0, 1 and 2^31 - 2), start a second one (multiplier 16807) at 1, 2 and 3. Two
-- generators of different multipliers never share a sequence of states.
local M = {}
M.__index = M

local MOD = 2147483647
M.MAX_SEED = 2 ^ 31

function M.new(seed)
  if type(seed) ~= "number" or seed % 1 ~= 0 or seed < 0 or seed > M.MAX_SEED then
    error(("cuasync.sweep.rng: seed must be an integer in 0..%d (got %s)"):format(M.MAX_SEED, tostring(seed)), 2)
  end
  if seed >= MOD - 1 then return setmetatable({ s = seed - (MOD - 2), a = 16807 }, M) end
  return setmetatable({ s = seed == 0 and MOD - 1 or seed, a = 48271 }, M)
end

-- An integer in 1..n.
function M:int(n)
  self.s = self.s * self.a % MOD
  return self.s % n + 1
end

-- The list shuffled in place (Fisher-Yates); returns it.
function M:shuffle(t)
  for i = #t, 2, -1 do
    local j = self:int(i)
    t[i], t[j] = t[j], t[i]
  end
  return t
end

return M
