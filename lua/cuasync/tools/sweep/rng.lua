-- A seeded random generator for the sweep's strategies (Park-Miller, 48271: every product is
-- exact in a double), so that a seed names the same choices on every machine and LuaJIT build.
local M = {}
M.__index = M

local MOD = 2147483647

function M.new(seed)
  local s = math.floor(seed) % MOD
  if s <= 0 then s = s + MOD - 1 end
  return setmetatable({ s = s }, M)
end

-- An integer in 1..n.
function M:int(n)
  self.s = self.s * 48271 % MOD
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
