-- The "json" handler: the sweep's document (name, order, device, unit, baseline, strategy,
-- completeness, rows); read() loads one back for sweep.merge.
local util = require("cuasync.util")
local json = require("cuasync.tools.json")
local common = require("cuasync.tools.report.common")

local M = {}

function M.document(S)
  return { name = S.name, order = S.order, device = S.device_name, unit = S.unit, baseline = S.baseline_row,
           strategy = S.strategy, seed = S.seed, complete = S.complete, stopped = S.stopped, rows = S.rows,
           shard = S.shard, wall_s = S.wall_s }
end

function M.write(S, path)
  return common.write_json("sweep.json", path, M.document(S))
end

function M.read(path)
  util.cstring("sweep.merge", "path", path)
  local doc, why = json.decode_file(path)
  if type(doc) ~= "table" or type(doc.rows) ~= "table" or type(doc.order) ~= "table" then
    util.fail("sweep.merge", ("%s is not a sweep's JSON (%s)"):format(path, why or "no rows or order"))
  end
  for i, r in ipairs(doc.rows) do
    if type(r) ~= "table" or type(r.index) ~= "number" or type(r.params) ~= "table" or type(r.kind) ~= "string" then
      util.fail("sweep.merge", ("%s is not a sweep's JSON (rows[%d] has no index, params or kind)"):format(path, i))
    end
  end
  return doc
end

return M
