-- The "csv" handler: one line per row, the parameters in the sweep's order, then the columns
-- below; read_csv parses it back (the specs' round trip, and --merge of CSV files).
local util = require("cuasync.util")
local fs = require("cuasync.fs")
local common = require("cuasync.tools.report.common")
local row = require("cuasync.tools.sweep.row")

local M = {}

M.COLUMNS = row.fields("column")

local function cell(v)
  if v == nil then return "" end
  local s = type(v) == "number" and common.fmt_value(v) or tostring(v)
  if s:find('[,"\n\r]') then s = '"' .. s:gsub('"', '""') .. '"' end
  return s
end

-- The file's text (M.write writes it; a hard stop keeps it, tools/sweep/stop.lua).
function M.render(S)
  local head = { "index" }
  for _, k in ipairs(S.order) do head[#head + 1] = k end
  for _, c in ipairs(M.COLUMNS) do head[#head + 1] = c end
  local lines = { table.concat(head, ",") }
  for _, r in ipairs(S.rows) do
    local line = { cell(r.index) }
    for _, k in ipairs(S.order) do line[#line + 1] = cell(r.params[k]) end
    for _, c in ipairs(M.COLUMNS) do line[#line + 1] = cell(r[c]) end
    lines[#lines + 1] = table.concat(line, ",")
  end
  return table.concat(lines, "\n") .. "\n"
end

function M.write(S, path)
  return common.write("sweep.csv", path, M.render(S))
end

function M.read(path)
  local text, why = fs.read(path)
  if not text then util.fail("sweep.read_csv", why) end
  local records, fields, buf, i, quoted = {}, {}, {}, 1, false
  while i <= #text do
    local ch = text:sub(i, i)
    if quoted then
      if ch == '"' then
        if text:sub(i + 1, i + 1) == '"' then buf[#buf + 1] = '"'; i = i + 1 else quoted = false end
      else buf[#buf + 1] = ch end
    elseif ch == '"' then quoted = true
    elseif ch == "," then fields[#fields + 1] = table.concat(buf); buf = {}
    elseif ch == "\n" then
      fields[#fields + 1] = table.concat(buf); buf = {}
      records[#records + 1] = fields; fields = {}
    else buf[#buf + 1] = ch end
    i = i + 1
  end
  return records
end

return M
