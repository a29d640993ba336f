-- sweep.merge: join the JSON files of shards (or of earlier runs) into one sweep's rows. Rows are
-- keyed by what they measured — device and driver, program digest, parameters (the row's `key`;
-- rows without one, pruned before any compile, by the file's device and their parameters) — so
-- merging a file twice, or shards that overlap, gives each row once. Two measurements of one key
-- that differ keep the first row's figures and both runs' in r.runs, with a note. Files of
-- another sweep (name or parameters) or of another device are refused by name.
local util = require("cuasync.util")
local report = require("cuasync.tools.report")
local row = require("cuasync.tools.sweep.row")

local M = {}
local WHERE = "sweep.merge"

local FIGURES = row.fields("figure")

local function same_figures(a, b)
  for _, k in ipairs(FIGURES) do if a[k] ~= b[k] then return false end end
  return true
end

local function run_of(r, path)
  local x = row.pick(r, "run")
  x.file = path
  return x
end

local function describe_run(x)
  if x.kind ~= "measured" then return ("%s (%s)"):format(x.kind, x.file) end
  return ("%s ms (%s)"):format(row.fmt_value(x.ms), x.file)
end

-- A row's identity across files.
local function key_of(doc, r)
  if type(r.key) == "string" then return r.key end
  return tostring(doc.device or "none") .. "|-|" .. row.params_text(doc.order, r.params)
end

-- Two rows of one key: the one that stands, with both runs noted where they differ.
local function join(kept, r, path)
  if kept.kind ~= "measured" and r.kind == "measured" then   -- a later run measured what an earlier could not
    r.runs = { run_of(kept, kept.file_), run_of(r, path) }
    r.note = ("measured in %s; %s in %s"):format(path, kept.kind, kept.file_)
    r.file_ = path
    return r
  end
  if kept.kind == "measured" and r.kind == "measured" and not same_figures(kept, r) then
    kept.runs = kept.runs or { run_of(kept, kept.file_) }
    kept.runs[#kept.runs + 1] = run_of(r, path)
    local t = {}
    for i, x in ipairs(kept.runs) do t[i] = describe_run(x) end
    kept.note = ("measured %d times with different figures: %s; the first stands"):format(#kept.runs, table.concat(t, ", "))
  end
  return kept
end

-- Merge the documents read from `paths` into S (a Sweep object made by the caller): its rows
-- and a new record of the merged run in S.result.
function M.into(S, paths)
  local R = { rows = {} }
  S.result = R
  util.list(WHERE, "paths", paths)
  if #paths == 0 then util.fail(WHERE, "no files to merge") end
  local by, first = {}, nil
  local json = report.handler("json")
  for i, path in ipairs(paths) do
    util.cstring(WHERE, ("paths[%d]"):format(i), path)
    local doc = json.read(path)
    if not first then
      first = { path = path, doc = doc }
      S.name, S.order, S.unit, R.device_name = doc.name, doc.order, doc.unit, doc.device
    else
      local a, b = first.doc, doc
      if a.name ~= b.name or table.concat(a.order, ",") ~= table.concat(b.order, ",") then
        util.fail(WHERE, ("%s is a result of sweep '%s' (params %s), not of '%s' (params %s) as %s is: merge the files of one sweep"):format(
          path, tostring(b.name), table.concat(b.order, ","), tostring(a.name), table.concat(a.order, ","), first.path))
      end
      if a.device and b.device and a.device ~= b.device then
        util.fail(WHERE, ("%s was measured on %s, %s on %s: rows of two devices do not make one sweep"):format(
          path, b.device, first.path, a.device))
      end
      R.device_name = R.device_name or b.device
    end
    R.baseline = R.baseline or doc.baseline
    if doc.complete == false then R.complete, R.stopped = false, doc.stopped end
    for _, r in ipairs(doc.rows) do
      local k = key_of(doc, r)
      local kept = by[k]
      if kept and kept.index ~= r.index then
        util.fail(WHERE, ("%s gives the point %s index %d, %s gave it index %d: the files are of different parameter lists"):format(
          path, row.params_text(doc.order, r.params), r.index, kept.file_, kept.index))
      end
      if not kept then r.file_ = path; by[k] = r
      else by[k] = join(kept, r, path) end
    end
  end
  -- one row per index: a point measured under two keys (two drivers) keeps both rows
  local rows = {}
  for _, r in pairs(by) do
    r.file_ = nil
    rows[#rows + 1] = r
  end
  table.sort(rows, function(a, b)
    if a.index ~= b.index then return a.index < b.index end
    return tostring(a.key) < tostring(b.key)
  end)
  S.baseline_name = R.baseline and R.baseline.name
  R.rows, R.best = rows, row.best(rows)
  S.rows, S.best, S.complete, S.notes = R.rows, R.best, R.complete, R.notes
  return S
end

return M
