-- The "json" handler: the sweep's document (name, order, params: the value lists, device, unit,
-- baseline, strategy, completeness, shard, rows); read() loads one back for sweep.merge, every
-- row checked as the sweep would have made it (row.check), once per index, and, where the file
-- names its value lists, the point its index is.
local util = require("cuasync.util")
local errors = require("cuasync.errors")
local json = require("cuasync.tools.json")
local common = require("cuasync.tools.report.common")
local row = require("cuasync.tools.sweep.row")
local space = require("cuasync.tools.sweep.space")

local M = {}

function M.document(S)
  local R = S.result or {}
  return { name = S.name, order = S.order, params = S.params, device = R.device_name, unit = S.unit, baseline = R.baseline,
           strategy = R.strategy, seed = R.seed, complete = R.complete, stopped = R.stopped, rows = S.rows,
           shard = R.shard, wall_s = R.wall_s }
end

-- The file's text (M.write writes it; a hard stop keeps it, tools/sweep/stop.lua).
function M.render(S) return common.json_text(M.document(S)) end

function M.write(S, path)
  return common.write("sweep.json", path, M.render(S))
end

-- A list of n entries (dkjson reads [] and {} alike as an empty table).
local function is_list(t)
  if type(t) ~= "table" then return false end
  local n = 0
  for k in pairs(t) do
    if type(k) ~= "number" then return false end
    n = n + 1
  end
  return n == #t
end

function M.read(path)
  util.cstring("sweep.merge", "path", path)
  local doc, why = json.decode_file(path)
  local function bad(what) util.fail("sweep.merge", ("%s is not a sweep's JSON (%s)"):format(util.describe(path, 200), what)) end
  if type(doc) ~= "table" then bad(why or ("a JSON " .. type(doc))) end
  if type(doc.name) ~= "string" then bad("no sweep name") end
  if not is_list(doc.order) or #doc.order == 0 then bad("no order: the list of its parameters") end
  for i, k in ipairs(doc.order) do
    if type(k) ~= "string" then bad(("order[%d] is %s, not a parameter name"):format(i, util.describe(k))) end
  end
  local points   -- the file's space, where it names its value lists (files written before it did not)
  if doc.params ~= nil then
    local ok, sp = pcall(space.new, "sweep.merge", doc.params, doc.order)
    if not ok then bad("params is not the sweep's value lists: " .. errors.message(sp):gsub("^cuasync%.[%w_.]+: ", "")) end
    points = sp
  end
  if not is_list(doc.rows) then bad("rows is not a list") end
  local at = {}
  for i, r in ipairs(doc.rows) do
    local wrong = row.check(r, doc.order)
    if wrong then bad(("rows[%d]%s"):format(i, wrong)) end
    -- one row per index, unless two measurements of the point under different keys (another
    -- driver, another program digest) were kept apart by a merge
    local prev = at[r.index] and doc.rows[at[r.index]]
    if prev and not (type(r.key) == "string" and type(prev.key) == "string" and r.key ~= prev.key
                     and type(prev.params) == "table" and row.key_text(doc.order, r.params) == row.key_text(doc.order, prev.params)) then
      bad(("rows[%d] has index %d, as rows[%d] has: one row per index (two only under different keys)"):format(i, r.index, at[r.index]))
    end
    at[r.index] = i
    if points and r.index > points:count() then
      bad(("rows[%d] has index %d, past the %d points of the file's params"):format(i, r.index, points:count()))
    end
    if points and row.key_text(doc.order, r.params) ~= row.key_text(doc.order, points:point(r.index)) then
      bad(("rows[%d].params is %s, but point %d of the file's params is %s"):format(i, row.params_text(doc.order, r.params), r.index,
        row.params_text(doc.order, points:point(r.index))))
    end
  end
  doc.points = points
  return doc
end

return M
