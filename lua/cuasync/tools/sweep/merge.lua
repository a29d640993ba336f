-- sweep.merge: join the JSON files of shards (or of earlier runs) into one sweep's rows. Rows are
-- keyed by what they measured — device and driver, program digest, parameters (the row's `key`;
-- rows without one, pruned before any compile, by the file's device and their parameters, in
-- row.key_text) — so merging a file twice, or shards that overlap, gives each row once. Two
-- measurements of one key that differ keep the first row's figures and both runs' in r.runs,
-- with a note. Every row is checked as the sweep makes them (report/json.lua's read, row.check).
-- Files of another sweep (name, parameters or their value lists) or of another device are
-- refused by name. A merge that leaves a point of the cross product without a row (a shard not
-- given) is incomplete, and says which shards.
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
  return tostring(doc.device or "none") .. "|-|" .. row.key_text(doc.order, r.params)
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

-- "k = 1, 2, 3; n = 4": a file's value lists, for a message.
local function lists(doc)
  local t = {}
  for _, k in ipairs(doc.order) do
    local vs = {}
    for i, v in ipairs(doc.params[k]) do vs[i] = row.fmt_value(v) end
    t[#t + 1] = k .. " = " .. table.concat(vs, ", ")
  end
  return table.concat(t, "; ")
end

local function same_lists(a, b)
  for _, k in ipairs(a.order) do
    local x, y = a.params[k], b.params[k]
    if #x ~= #y then return false end
    for i = 1, #x do if row.key_text({ "v" }, { v = x[i] }) ~= row.key_text({ "v" }, { v = y[i] }) then return false end end
  end
  return true
end

-- Why the merged rows are not the whole sweep (nil: every point has a row, or the files do not
-- say how many points there are): the shards not given, else the points without a row.
local function gap(docs, rows)
  local points
  for _, d in ipairs(docs) do points = points or d.points end
  if not points then return nil end
  local have, missing = {}, 0
  for _, r in ipairs(rows) do have[r.index] = true end
  for i = 1, points:count() do if not have[i] then missing = missing + 1 end end
  if missing == 0 then return nil end
  local n, given = nil, {}
  for _, d in ipairs(docs) do
    local i, m = tostring(d.shard):match("^(%d+)/(%d+)$")
    if not m or (n and n ~= tonumber(m)) then n = false break end
    n, given[tonumber(i)] = tonumber(m), true
  end
  if n then
    local names = {}
    for i = 1, n do if not given[i] then names[#names + 1] = ("%d/%d"):format(i, n) end end
    return ("shard%s %s %s not merged: %s %d points have no rows"):format(#names > 1 and "s" or "", table.concat(names, ", "),
      #names > 1 and "were" or "was", #names > 1 and "their" or "its", missing)
  end
  return ("%d of the %d points of the cross product have no row in the files merged"):format(missing, points:count())
end

-- Merge the documents read from `paths` into S (a Sweep object made by the caller): its rows
-- and a new record of the merged run in S.result.
function M.into(S, paths)
  local R = { rows = {} }
  S.result = R
  util.list(WHERE, "paths", paths)
  if #paths == 0 then util.fail(WHERE, "no files to merge") end
  local by, first, docs = {}, nil, {}
  local json = report.handler("json")
  for i, path in ipairs(paths) do
    util.cstring(WHERE, ("paths[%d]"):format(i), path)
    local doc = json.read(path)
    docs[#docs + 1] = doc
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
      if a.params and b.params and not same_lists(a, b) then
        util.fail(WHERE, ("%s was run with params %s, %s with %s: the shards of one sweep share its value lists"):format(
          path, lists(b), first.path, lists(a)))
      end
      R.device_name = R.device_name or b.device
    end
    S.params = S.params or doc.params
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
  if R.complete ~= false then   -- a file stopped early leaves it incomplete; so does a shard not given
    R.stopped = gap(docs, rows)
    R.complete = R.stopped == nil
  end
  S.rows, S.best, S.complete, S.notes = R.rows, R.best, R.complete, R.notes
  return S
end

return M
