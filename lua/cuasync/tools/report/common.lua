-- What every report handler shares: the row model (sweep/row.lua: value formatting, a row's
-- figure, the best row), and writing an output file (through fs.lua, every write checked) with
-- a message that says what is wrong (which directory is missing, or the system's reason: a full
-- disk).
local util = require("cuasync.util")
local row = require("cuasync.tools.sweep.row")
local fs = require("cuasync.fs")
local json = require("cuasync.tools.json")

local M = {}

M.fmt_value, M.params_text, M.figure, M.best = row.fmt_value, row.params_text, row.figure, row.best

-- Write a report's text to path, once: returns path, or raises "cuasync.<where>: cannot write
-- PATH: the directory D does not exist" or "...: cannot write PATH: <the system's reason>".
function M.write(where, path, text)
  util.cstring(where, "path", path)
  local ok, why = fs.write(path, text)
  if not ok then util.fail(where, why) end
  return path
end

-- A document as the JSON reports write it (tools/json.lua, indented).
function M.json_text(doc)
  json.lib()
  return json.encode(doc, true) .. "\n"
end

return M
