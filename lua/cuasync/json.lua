-- JSON, in the core because fs.lua's sealed format is JSON with a checksum of its text (the
-- tools' sweep results, store, worker tasks and T4 use it through tools/json.lua, a re-export).
-- Written here: keys sorted (the same table gives the same bytes, which a seal needs), numbers
-- exact (%.17g), and a table is an array only when its keys are 1..n (dkjson takes a key "n" for
-- an array length: a sweep parameter named n). Read with Debian's dkjson, loaded on first use,
-- with one message where it is missing.
local util = require("cuasync.util")

local M = {}
local dk

function M.lib()
  if dk then return dk end
  local ok, lib = pcall(require, "dkjson")   -- lazy: only JSON readers need dkjson installed
  if not ok then util.fail("json", "JSON needs dkjson (Debian: apt-get install lua-dkjson)") end
  dk = lib
  return dk
end

local ESC = { ['"'] = '\\"', ["\\"] = "\\\\", ["\b"] = "\\b", ["\f"] = "\\f", ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t" }

local function str(s)
  return '"' .. s:gsub('[%c"\\]', function(c) return ESC[c] or ("\\u%04x"):format(c:byte()) end) .. '"'
end

local function is_array(t)
  local n = 0
  for k in pairs(t) do
    if type(k) ~= "number" or k < 1 or k % 1 ~= 0 then return false end
    n = n + 1
  end
  return n > 0 and n == #t
end

local function enc(v, out, indent, depth)
  local t = type(v)
  if t == "nil" then out[#out + 1] = "null"
  elseif t == "boolean" then out[#out + 1] = tostring(v)
  elseif t == "number" then
    if v ~= v or v == math.huge or v == -math.huge then out[#out + 1] = "null"
    elseif v % 1 == 0 and math.abs(v) < 2 ^ 53 then out[#out + 1] = ("%d"):format(v)
    else out[#out + 1] = ("%.17g"):format(v) end
  elseif t == "string" then out[#out + 1] = str(v)
  elseif t == "table" then
    local nl = indent and ("\n" .. ("  "):rep(depth + 1)) or ""
    local close = indent and ("\n" .. ("  "):rep(depth)) or ""
    if is_array(v) then
      out[#out + 1] = "["
      for i = 1, #v do
        out[#out + 1] = (i > 1 and "," or "") .. nl
        enc(v[i], out, indent, depth + 1)
      end
      out[#out + 1] = close .. "]"
    else
      local keys = {}
      for k in pairs(v) do keys[#keys + 1] = tostring(k) end
      table.sort(keys)
      out[#out + 1] = "{"
      for i, k in ipairs(keys) do
        local val = v[k]
        if val == nil then val = v[tonumber(k)] end
        out[#out + 1] = (i > 1 and "," or "") .. nl .. str(k) .. (indent and ": " or ":")
        enc(val, out, indent, depth + 1)
      end
      out[#out + 1] = (#keys > 0 and close or "") .. "}"
    end
  else
    error("cuasync.json: cannot write a " .. t .. " as JSON (JSON holds nil, booleans, numbers, strings and tables)", 0)
  end
end

function M.encode(v, pretty)
  local out = {}
  enc(v, out, pretty, 0)
  return table.concat(out)
end

-- The document in text, or nil and why ("empty: truncated", "not JSON: <dkjson's message>").
function M.decode(text)
  if text == "" then return nil, "empty: truncated" end
  local doc, _, err = M.lib().decode(text)
  if doc == nil then return nil, "not JSON: " .. tostring(err) end
  return doc
end

return M
