-- The field names a page of docs/ gives a table argument: docs_spec holds them to the code's
-- known-field lists. A page writes a call's fields as a Lua table literal, in prose
-- (`cuasync.sweep{ name, params, ... }`, `cfg` is `{ grid, block, ... }`) or in code
-- (`S:run{ jobs = 4, gpus = "all" | { 0, 1 }, ... }`): M.fields reads the top-level names of the
-- literal that opens at a position, M.find every literal a page opens after one of some markers.
local M = {}

local OPEN, CLOSE = { ["{"] = true, ["("] = true, ["["] = true }, { ["}"] = true, [")"] = true, ["]"] = true }
local AFTER = { ["="] = true, [","] = true, ["}"] = true, ["|"] = true }

-- The names in key position of the table literal whose "{" is text[at]: a name at the literal's
-- own depth, after "{", "," or "|" (prose writes alternatives `source = s | file = p`), and
-- before "=", ",", "}" or "|". Strings, comments, nested brackets, backticks (a code span that
-- prose closes and opens again) and a `local a, b = ...` inside a function value are skipped.
function M.fields(text, at)
  assert(text:sub(at, at) == "{", "not a table literal at " .. at)
  local depth, i, n = 1, at + 1, #text
  local last, in_local = "{", false   -- the last significant character at depth 1
  local out, seen = {}, {}
  while i <= n and depth > 0 do
    local c = text:sub(i, i)
    if c == '"' or c == "'" then
      local j = i + 1
      while j <= n and text:sub(j, j) ~= c and text:sub(j, j) ~= "\n" do j = j + (text:sub(j, j) == "\\" and 2 or 1) end
      i = j + 1
      if depth == 1 then last = c end
    elseif text:sub(i, i + 1) == "--" then
      i = (text:find("\n", i, true) or n) + 1
    elseif c == "`" then
      i = i + 1
    elseif OPEN[c] then
      depth, i = depth + 1, i + 1
    elseif CLOSE[c] then
      depth, i = depth - 1, i + 1
      if depth == 1 then last = c end
    elseif c:match("[%a_]") then
      local name = text:match("^[%a_][%w_]*", i)
      local j = i + #name
      if depth == 1 then
        local nxt, eq2 = text:match("^%s*(.)(.?)", j)
        if name == "local" then in_local = true
        elseif not in_local and (last == "{" or last == "," or last == "|") and AFTER[nxt] and not (nxt == "=" and eq2 == "=") then
          if not seen[name] then seen[name] = true; out[#out + 1] = name end
        end
        last = "a"
      end
      i = j
    else
      if depth == 1 and not c:match("%s") then
        last = c
        if c == "=" then in_local = false end
      end
      i = i + 1
    end
  end
  return out
end

-- Every literal `text` opens right after one of the markers (plain strings ending in "{"):
-- { line, fields } in page order.
function M.find(text, markers)
  local out = {}
  for _, m in ipairs(markers) do
    local pos = 1
    while true do
      local a, b = text:find(m, pos, true)
      if not a then break end
      local _, nl = text:sub(1, a):gsub("\n", "")
      out[#out + 1] = { line = nl + 1, at = b, fields = M.fields(text, b) }
      pos = b + 1
    end
  end
  table.sort(out, function(x, y) return x.at < y.at end)
  return out
end

return M
