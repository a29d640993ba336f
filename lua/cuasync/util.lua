-- Argument checks shared by the public functions. Each raises "cuasync.<where>: <what> (<rule>)".
local M = {}

local function describe(v)
  if type(v) == "string" then return ("%q"):format(v) end
  return tostring(v)
end
M.describe = describe

function M.fail(where, msg, level)
  error("cuasync." .. where .. ": " .. msg, (level or 2) + 1)
end

function M.is_integer(v)
  return type(v) == "number" and v == math.floor(v) and v > -math.huge and v < math.huge
end

-- A positive integer (or, with allow_zero, a non-negative one).
function M.count(where, name, v, level, allow_zero)
  if not M.is_integer(v) or v < 0 or (v == 0 and not allow_zero) then
    M.fail(where, ("%s must be a %s integer (got %s)"):format(name, allow_zero and "non-negative"
           or "positive", describe(v)), (level or 2) + 1)
  end
  return v
end

function M.kind(where, name, v, want, level)
  if type(v) ~= want then
    M.fail(where, ("%s must be a %s (got %s)"):format(name, want, type(v)), (level or 2) + 1)
  end
  return v
end

-- Reject fields a table does not know, so a typo never silently does nothing.
function M.known_fields(where, t, allowed, level)
  for k in pairs(t) do
    if not allowed[k] then
      local names = {}
      for n in pairs(allowed) do names[#names + 1] = n end
      table.sort(names)
      M.fail(where, ("unknown field '%s' (fields: %s)"):format(tostring(k), table.concat(names, ", ")),
             (level or 2) + 1)
    end
  end
end

return M
