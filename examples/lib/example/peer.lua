-- A peer script in another language, run from an example in the same run: examples/peers/*.py
-- through python3 (found on PATH), its one JSON line read back. Every way it can fail comes
-- back as nil and a sentence saying why (no python3, the script's own error line, its exit code
-- and last output where it printed no line). The line's fields are read with patterns (numbers,
-- null, plain strings: what the peers print), so no JSON library is needed.
--   local p, why = require("example.peer").run("peers/graph_while.py", { "--iters", 1000 })
--   p.host_ms, p.while_ms (nil for null), p.x_hex, p.version, ...
local isolate = require("cuasync.tools.isolate")

local M = {}

local examples = debug.getinfo(1, "S").source:match("^@(.*)/lib/example/[^/]*$") or "."

-- The value of key in a JSON line of numbers, null and plain strings (no escapes but \" and \\).
local function field(line, key)
  local at = line:find('"' .. key .. '": ', 1, true)
  if not at then return nil end
  local rest = line:sub(at + #key + 4)
  if rest:sub(1, 4) == "null" then return nil end
  local num = rest:match("^(-?[%d%.eE+-]+)")
  if num then return tonumber(num) end
  local str = rest:match('^"(.-[^\\])"[,}]') or rest:match('^"()"') and ""
  if str then return (str:gsub('\\"', '"'):gsub("\\\\", "\\")) end
  return nil
end

local FIELDS = { "peer", "error", "version", "device", "n", "iters", "rounds", "seed", "sweeps", "host_ms", "body_ms",
                 "while_ms", "ratio", "body_ratio", "x_hex", "while_why" }

-- Run examples/<script> with args under python3; -> the fields of its JSON line, or nil, why.
function M.run(script, args, timeout_s)
  local py = isolate.which("python3")
  if not py then return nil, "python3 is not on PATH" end
  local argv = { py, examples .. "/" .. script }
  for _, a in ipairs(args or {}) do argv[#argv + 1] = tostring(a) end
  local ok, out, code = isolate.command(argv, { timeout_s = timeout_s or 600 })
  local line
  for l in out:gmatch("[^\n]+") do if l:match('^{"peer": ') then line = l end end
  local p = {}
  if line then for _, k in ipairs(FIELDS) do p[k] = field(line, k) end end
  if ok and line and not p.error then return p end
  local tail = out:gsub("%s+$", ""):match("([^\n]*\n?[^\n]*\n?[^\n]*)$") or ""
  local why = p.error or (line and "its line has no result") or ("it printed no result line; its last output: " .. (tail ~= "" and tail or "(none)"))
  if code == 124 then why = ("it ran past %d s; "):format(timeout_s or 600) .. why end
  return nil, ("%s %s: %s (exit %s)"):format(py, script, why, tostring(code))
end

-- The bytes of s in lower-case hex (as Python's bytes.hex()).
function M.hex(s)
  return (s:gsub(".", function(ch) return ("%02x"):format(ch:byte()) end))
end

return M
