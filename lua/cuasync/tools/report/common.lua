-- What every report handler shares: value formatting, a row's figure, and opening an output
-- file with a message that says what is wrong (which directory is missing).
local util = require("cuasync.util")
local cache = require("cuasync.cache")
local json = require("cuasync.tools.json")

local M = {}

function M.fmt_value(v)
  if type(v) == "number" then
    if v == math.floor(v) and math.abs(v) < 2 ^ 53 then return ("%d"):format(v) end
    return ("%.6g"):format(v)
  end
  return tostring(v)
end

function M.params_text(order, p)
  local t = {}
  for _, k in ipairs(order) do t[#t + 1] = k .. "=" .. M.fmt_value(p[k]) end
  return table.concat(t, " ")
end

-- The figure a row is ranked by: its ratio to the baseline, else GB/s, else TFLOP/s, else 1/ms.
function M.figure(r)
  return r.ratio or r.gbps or r.tflops or (r.ms and 1 / r.ms)
end

-- The best measured, verified row (slow rows included: they can only lose).
function M.best(rows)
  local best
  for _, r in ipairs(rows) do
    if r.kind == "measured" and r.verified ~= false and M.figure(r)
       and (not best or M.figure(r) > M.figure(best)) then best = r end
  end
  return best
end

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
