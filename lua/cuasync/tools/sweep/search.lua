-- S:run: the loop that joins the sweep's parts. Every point of the shard becomes a row (row.lua);
-- where(p) and program(p) prune before any compile (measure.admit); the strategy (strategies/)
-- chooses batches of the remaining candidates until it is done or the budget is spent; each
-- batch is answered by the run's runners (runners/: the store, the compile service, a runner);
-- the winner is measured again alone; the store keeps what was measured (memo.lua). A point
-- never chosen is a row too: skipped, "not sampled". The run's results are one record, S.result
-- (S.rows, S.best, S.complete, S.notes are its public names on the sweep).
local device = require("cuasync.device")
local streams = require("cuasync.stream")
local util = require("cuasync.util")
local rng = require("cuasync.tools.sweep.rng")
local row = require("cuasync.tools.sweep.row")
local measure = require("cuasync.tools.sweep.measure")
local options = require("cuasync.tools.sweep.options")
local strategies = require("cuasync.tools.sweep.strategies")
local compile = require("cuasync.tools.sweep.compile")
local memo = require("cuasync.tools.sweep.memo")
local runners = require("cuasync.tools.sweep.runners")
local progress = require("cuasync.tools.sweep.progress")
local stop = require("cuasync.tools.sweep.stop")

local M = {}
local WHERE = "sweep.run"

local function now_s() return streams.now_ns() / 1e9 end

-- The shard's rows, by index (R.rows).
local function shard_rows(S, R, shard)
  local rows, by = {}, {}
  for i = 1, S.space:count() do
    if not shard or (i - 1) % shard.n == shard.i - 1 then
      local r = row.new(i, S.space:point(i))
      rows[#rows + 1], by[i] = r, r
    end
  end
  if #rows == 0 then util.fail(WHERE, "the shard holds no point of the cross product") end
  R.rows = rows
  return rows, by
end

-- The candidates: the indices still to evaluate after admit (where, program: the user's code,
-- so a hard stop there writes every row as not run). Ctrl-C twice leaves the rest not run.
local function admit(S, R, o, rows)
  local all, none, candidates = {}, {}, {}
  for _, r in ipairs(rows) do all[r.index] = true; none[#none + 1] = r.index end
  stop.keep(S, R, none, all, o.on_stop, true)
  for _, r in ipairs(rows) do
    if stop.requested() then
      row.set(r, "skipped", stop.NOT_RUN)
      candidates[#candidates + 1] = r.index
    elseif measure.admit(S, r) then
      candidates[#candidates + 1] = r.index
    end
  end
  return candidates
end

-- Why the search stops before the strategy is done (nil: go on).
local function halted(budget, t0)
  if stop.requested() then return stop.REASON end
  if budget and budget.seconds and now_s() - t0 >= budget.seconds then return ("budget of %g s reached"):format(budget.seconds) end
end

local function budget_text(o)
  local b = o.budget
  if not b then return "" end
  return ", budget " .. (b.points and (b.points .. " points") or "") .. (b.points and b.seconds and ", " or "") ..
         (b.seconds and (b.seconds .. " s") or "")
end

-- The search: batches from the strategy, answered by the runners, until done or stopped.
-- measures: whether this run can give a point a figure (a GPU, a host sweep, or a replay), and
-- why not (a strategy that ranks points says it cannot search, in a note).
local function search(S, R, o, runs, by, candidates, t0, measures, why)
  local chooser = strategies.load(o.strategy)({ candidates = candidates, space = S.space, rng = rng.new(o.seed),
                                                batch = o.budget and math.max(o.jobs, 8) or nil,
                                                measures = measures, why = why,
                                                note = function(text) measure.note(S, text) end })
  local seen, measured_now, evaluated, stopped = {}, {}, 0, nil
  while not stopped do
    stopped = halted(o.budget, t0)
    local batch = not stopped and chooser:next(seen)
    if not batch or #batch == 0 then break end
    local pending = {}   -- what a hard stop in this batch leaves not run
    for _, i in ipairs(candidates) do if seen[i] == nil then pending[i] = true end end
    stop.keep(S, R, candidates, pending, o.on_stop)
    local room = o.budget and o.budget.points and o.budget.points - evaluated
    if room and #batch > room then
      for k = #batch, room + 1, -1 do batch[k] = nil end
      stopped = ("budget of %d points reached"):format(o.budget.points)
    end
    if #batch == 0 then break end
    local list = {}
    for k, i in ipairs(batch) do list[k] = by[i] end
    for _, r in ipairs(runs:answer(list)) do measured_now[#measured_now + 1] = r end
    for _, r in ipairs(list) do
      seen[r.index] = r.kind == "measured" and r.verified ~= false and row.figure(r) or false
      runs:seen(r)
    end
    evaluated = evaluated + #list
  end
  stop.settle(R, by, candidates, seen, stopped, ("not sampled (strategy %s%s)"):format(o.strategy, budget_text(o)))
  R.evaluated = evaluated
  return measured_now
end

local function run(S, R, o, compiler)
  local t0 = now_s()
  local rows, by = shard_rows(S, R, o.shard)
  local candidates = admit(S, R, o, rows)
  local gpu_ok, why = device.available()
  local can = gpu_ok or S.host
  local m = memo.open(S, R, gpu_ok, o.replay)
  if R.store.problem then measure.note(S, R.store.problem) end   -- said once, plainly; the sweep measures on
  local list = {}
  for k, i in ipairs(candidates) do list[k] = by[i] end
  m:key(list)
  local gpus = (not S.host and options.gpus(WHERE, o.gpus, gpu_ok)) or { 0 }
  R.gpus = #gpus > 1 and gpus or nil
  if not S.host and can and not o.replay then device.open(gpus[1]) end
  local runs = runners.new(S, R, { replay = o.replay, force = o.force, measure = can, why = why, gpus = gpus,
                                   memo = m, compiler = compiler, step = compiler.step })
  local measured_now = search(S, R, o, runs, by, candidates, t0, can or o.replay, why)
  if can and not o.replay and #measured_now > 1 and not stop.requested() then
    stop.keep(S, R, candidates, {}, o.on_stop)
    runs:remeasure(rows)
  end
  if o.trace and can and not S.host and not o.replay and not stop.requested() then runs:trace(rows, o.trace) end
  if can and not o.replay then
    local note = m:keep(rows, measured_now)
    if note then   -- what became of a store that could not be used replaces the problem
      local notes = R.notes or {}
      local at
      for k, n in ipairs(notes) do if n == R.store.problem then at = k end end
      if at then notes[at] = note else measure.note(S, note) end
    end
  end
  for _, r in ipairs(rows) do r.prog, r.cost = nil, nil end   -- r.key stays: merge joins rows by it
  R.strategy, R.seed = o.strategy, o.strategy ~= "exhaustive" and o.strategy ~= "replay" and o.seed or nil
  R.best, R.at, R.wall_s = row.best(rows), os.time(), now_s() - t0
end

-- S:run's options checked, then the run; S.result is its record (M.result).
function M.run(S, o)
  o = options.run(WHERE, S, o or {})
  if o.slurm ~= nil then util.fail(WHERE, "slurm is handled by S:run (cuasync.sweep), not here") end
  local R = M.result(o)
  S.result = R
  -- Ctrl-C is counted while the sweep runs: once cancels the running watched kernel, twice
  -- stops the sweep (its rows are returned, so the caller still writes them), or, inside a
  -- variant's own code, ends the process after writing what stop.keep kept (stop.lua)
  stop.begin()
  local compiler = compile.new(S, o.jobs, progress.new(S.name, o.quiet))
  local ok, err = pcall(run, S, R, o, compiler)
  R.compile_s, R.compile_workers = compiler.seconds, compiler:workers()
  compiler:close()
  stop.finish()
  M.publish(S, R)
  if not ok then error(err, 0) end
  return S
end

-- A run's record: { rows, best, complete, stopped, interrupted, notes, baseline (the baseline's row), strategy,
-- seed, evaluated, shard, gpus, device_name, store = { damaged, old, path, problem },
-- skipped_launches, compile_s, compile_workers, at, wall_s }.
function M.result(o)
  return { rows = {}, shard = o and o.shard and ("%d/%d"):format(o.shard.i, o.shard.n) or nil, compile_s = 0 }
end

-- The public names on the sweep: S.rows, S.best, S.complete, S.notes (the rest: S.result).
function M.publish(S, R)
  S.result, S.rows, S.best, S.complete, S.notes = R, R.rows, R.best, R.complete, R.notes
end

return M
