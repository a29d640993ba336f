-- What every report handler shares: the row model (sweep/row.lua: value formatting, a row's
-- figure, the best row), and opening an output file with a message that says what is wrong
-- (which directory is missing).
local util = require("cuasync.util")
local row = require("cuasync.tools.sweep.row")
local cache = require("cuasync.cache")
local json = require("cuasync.tools.json")

local M = {}

M.fmt_value, M.params_text, M.figure, M.best = row.fmt_value, row.params_text, row.figure, row.best

-- A file opened for writing, or a named error: the missing directory, or the system's reason.
function M.writable(where, path)
  util.cstring(where, "path", path)
  local dir = path:match("^(.*)/[^/]*$")
  if dir and dir ~= "" and cache.file_kind(dir) == "missing" then
    util.fail(where, ("cannot write %s: the directory %s does not exist"):format(path, dir))
  end
  local f, err = io.open(path, "w")
  if not f then util.fail(where, ("cannot write %s: %s"):format(path, tostring(err))) end
  return f
end

-- A document written as JSON (tools/json.lua) to path; returns path.
function M.write_json(where, path, doc)
  json.lib()
  local f = M.writable(where, path)
  f:write(json.encode(doc, true), "\n")
  f:close()
  return path
end

return M
