-- A sweep's space: named parameters, each a list of values, in an order (the last varies
-- fastest). Point i (1-based) is the mixed-radix number of its values' positions, so a point,
-- its index and its neighbours are computed, never stored: a 2,000-point space costs nothing.
local util = require("cuasync.util")

local M = {}
local Space = {}
Space.__index = Space

local function is_scalar(v) return type(v) == "number" or type(v) == "string" or type(v) == "boolean" end

-- Check one parameter's values (where: the caller's name for messages).
local function check_values(where, k, vs)
  util.list(where, "params." .. k, vs)
  if #vs == 0 then util.fail(where, ("params.%s is empty: the cross product has no point"):format(k)) end
  for i, v in ipairs(vs) do
    if not is_scalar(v) then
      util.fail(where, ("params.%s[%d] must be a number, string or boolean (got %s)"):format(k, i, type(v)))
    end
    if type(v) == "number" and (v ~= v or v == math.huge or v == -math.huge) then
      util.fail(where, ("params.%s[%d] is %s: a parameter value must be finite (it names the point in files)"):format(k, i, util.describe(v)))
    end
  end
end

function M.new(where, params, order)
  util.kind(where, "params", params, "table")
  local names = {}
  for k, vs in pairs(params) do
    if type(k) ~= "string" or not k:match("^[%a_][%w_]*$") then
      util.fail(where, ("params key %s must be a name"):format(util.describe(k)))
    end
    check_values(where, k, vs)
    names[#names + 1] = k
  end
  if #names == 0 then util.fail(where, "params must name at least one parameter") end
  table.sort(names)
  if order ~= nil then
    util.list(where, "order", order)
    local seen = {}
    for i, k in ipairs(order) do
      if type(k) ~= "string" or params[k] == nil then util.fail(where, ("order names %s, which is not in params"):format(util.describe(k))) end
      if seen[k] then util.fail(where, ("order names %s twice (order[%d] and order[%d])"):format(util.describe(k), seen[k], i)) end
      seen[k] = i
    end
    for _, k in ipairs(names) do
      if not seen[k] then util.fail(where, ("order leaves out params.%s"):format(k)) end
    end
    names = order
  end
  local copy = {}
  for k, vs in pairs(params) do copy[k] = vs end
  return setmetatable({ order = names, params = copy }, Space)
end

-- Replace a parameter's values (the command line's --param name=v1,v2).
function Space:set(where, name, values)
  if self.params[name] == nil then
    util.fail(where, ("unknown param %s (params: %s)"):format(util.describe(name), table.concat(self.order, ", ")))
  end
  check_values(where, name, values)
  self.params[name] = values
end

function Space:count()
  local n = 1
  for _, k in ipairs(self.order) do n = n * #self.params[k] end
  return n
end

-- The positions (1-based, one per parameter in order) of point i.
function Space:digits(i)
  local d, rest = {}, i - 1
  for j = #self.order, 1, -1 do
    local n = #self.params[self.order[j]]
    d[j] = rest % n + 1
    rest = math.floor(rest / n)
  end
  return d
end

function Space:index(d)
  local i = 0
  for j, k in ipairs(self.order) do i = i * #self.params[k] + d[j] - 1 end
  return i + 1
end

function Space:point(i)
  local p, d = {}, self:digits(i)
  for j, k in ipairs(self.order) do p[k] = self.params[k][d[j]] end
  return p
end

-- Every point, in order.
function Space:points()
  local t = {}
  for i = 1, self:count() do t[i] = self:point(i) end
  return t
end

-- The points one step away from i: one parameter moved to the value before or after its own.
function Space:neighbours(i)
  local d, out = self:digits(i), {}
  for j, k in ipairs(self.order) do
    for _, step in ipairs({ -1, 1 }) do
      local v = d[j] + step
      if v >= 1 and v <= #self.params[k] then
        d[j] = v
        out[#out + 1] = self:index(d)
        d[j] = v - step
      end
    end
  end
  return out
end

return M
