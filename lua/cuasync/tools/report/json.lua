-- The "json" handler: the sweep's document (name, order, device, unit, baseline, strategy,
-- completeness, rows); read() loads one back for sweep.merge.
local util = require("cuasync.util")
local json = require("cuasync.tools.json")
local common = require("cuasync.tools.report.common")
local row = require("cuasync.tools.sweep.row")

local M = {}

function M.document(S)
  local R = S.result or {}
  return { name = S.name, order = S.order, device = R.device_name, unit = S.unit, baseline = R.baseline,
           strategy = R.strategy, seed = R.seed, complete = R.complete, stopped = R.stopped, rows = S.rows,
           shard = R.shard, wall_s = R.wall_s }
end

function M.write(S, path)
  return common.write_json("sweep.json", path, M.document(S))
end

local KINDS = row.IS_KIND

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
  if not is_list(doc.rows) then bad("rows is not a list") end
  for i, r in ipairs(doc.rows) do
    if type(r) ~= "table" or not util.is_integer(r.index) or r.index < 1 or type(r.params) ~= "table" then
      bad(("rows[%d] has no index or params"):format(i))
    end
    if not KINDS[r.kind] then
      bad(("rows[%d].kind is %s, not measured, pruned, failed, skipped or cancelled"):format(i, util.describe(r.kind)))
    end
    for _, k in ipairs(doc.order) do
      if r.params[k] == nil then bad(("rows[%d].params has no %s, a parameter of its order"):format(i, k)) end
    end
  end
  return doc
end

return M
