-- What every report handler shares: value formatting, a row's figure, and writing an output
-- file (through fs.lua, every write checked) with a message that says what is wrong (which
-- directory is missing, or the system's reason: a full disk).
local util = require("cuasync.util")
local fs = require("cuasync.fs")
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

-- Write a report's text to path, once: returns path, or raises "cuasync.<where>: cannot write
-- PATH: the directory D does not exist" or "...: cannot write PATH: <the system's reason>".
function M.write(where, path, text)
  util.cstring(where, "path", path)
  local ok, why = fs.write(path, text)
  if not ok then util.fail(where, why) end
  return path
end

-- A document written as JSON (tools/json.lua, indented) to path; returns path.
function M.write_json(where, path, doc)
  json.lib()
  return M.write(where, path, json.encode(doc, true) .. "\n")
end

return M
