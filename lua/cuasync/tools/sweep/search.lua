-- S:run: the loop that joins the sweep's parts. Every point becomes a row; where(p) and
-- program(p) prune before any compile; the strategy chooses batches of the remaining candidates
-- until it is done or the budget is spent; each batch is answered from the result store or
-- compiled (workers), built, verified and timed (runner); the winner is measured again alone;
-- the store keeps what was measured. A point never chosen is a row too: skipped, "not sampled".
local device = require("cuasync.device")
local streams = require("cuasync.stream")
local compiler = require("cuasync.compiler")
local util = require("cuasync.util")
local common = require("cuasync.tools.report.common")
local rng = require("cuasync.tools.sweep.rng")
local runner = require("cuasync.tools.sweep.runner")
local workers = require("cuasync.tools.sweep.workers")
local store = require("cuasync.tools.sweep.store")
local progress = require("cuasync.tools.sweep.progress")
local native = require("cuasync.native")
require("cuasync.cdef.signal")
local STRATEGY = { exhaustive = require("cuasync.tools.sweep.strategies.exhaustive"),
                   random = require("cuasync.tools.sweep.strategies.random"),
                   ["local"] = require("cuasync.tools.sweep.strategies.local"),
                   replay = require("cuasync.tools.sweep.strategies.replay") }

local M = { STRATEGIES = { "exhaustive", "random", "local", "replay" }, REMEASURE = 3 }
local known = {}
for _, s in ipairs(M.STRATEGIES) do known[s] = true end

-- Check { strategy, budget, seed } (a sweep's defaults or run's options); returns them.
function M.check(where, t)
  if t.strategy ~= nil and (type(t.strategy) ~= "string" or not known[t.strategy]) then
    util.fail(where, ("strategy must be one of %s (got %s)"):format(table.concat(M.STRATEGIES, ", "), util.describe(t.strategy)))
  end
  if t.budget ~= nil then
    util.kind(where, "budget", t.budget, "table")
    util.known_fields(where, t.budget, { points = true, seconds = true }, "budget")
    if t.budget.points == nil and t.budget.seconds == nil then util.fail(where, "budget must give points, seconds or both") end
    if t.budget.points ~= nil then util.count(where, "budget.points", t.budget.points) end
    local s = t.budget.seconds
    if s ~= nil and (type(s) ~= "number" or s ~= s or s <= 0 or s == math.huge) then
      util.fail(where, ("budget.seconds must be a positive number (got %s)"):format(util.describe(s)))
    end
  end
  if t.seed ~= nil then util.int_in(where, "seed", t.seed, 0, 2 ^ 31) end
  return t
end

local function parse_shard(where, s)
  if s == nil then return nil end
  local i, n
  if type(s) == "string" then i, n = s:match("^(%d+)/(%d+)$") i, n = tonumber(i), tonumber(n)
  elseif type(s) == "table" then i, n = s[1], s[2] end
  if not (util.is_integer(i) and util.is_integer(n) and n >= 1 and i >= 1 and i <= n) then
    util.fail(where, ('shard must be "i/n" with 1 <= i <= n (got %s)'):format(util.describe(s)))
  end
  return i, n
end

local function gpu_list(where, g, available)
  if g == nil then return nil end
  if g == "all" then
    if not available then return nil end
    local t = {}
    for i = 0, device.count() - 1 do t[#t + 1] = i end
    return t
  end
  util.list(where, "gpus", g)
  for i, d in ipairs(g) do util.int_in(where, ("gpus[%d]"):format(i), d, 0, 63) end
  return g
end

local function now_s() return streams.now_ns() / 1e9 end

-- The rows of the latest stored run on `dev_key`, by their params text (what replay answers from).
local function latest(st, dev_key, S)
  local by, run = {}, st.runs[dev_key]
  for _, k in ipairs(run and type(run.keys) == "table" and run.keys or {}) do
    local e = st.entries[k]
    if e and type(e.params) == "table" then by[common.params_text(S.order, e.params)] = e end
  end
  return by
end

-- Answer a batch: from the store, else compile, build, verify and time. Returns the rows measured now.
local function evaluate(S, ctx, batch)
  local fresh, with_prog = {}, {}
  for _, r in ipairs(batch) do
    local e = ctx.replay and ctx.replayed[common.params_text(S.order, r.params)] or (not ctx.replay and ctx.entries[r.key])
    if e and (ctx.replay or (ctx.can_measure and not ctx.force)) then
      local index, params = r.index, r.params   -- a stored entry brings figures, never the row's identity
      for k, v in pairs(e) do r[k] = v end
      r.index, r.params, r.cached, r.sum = index, params, true, nil
    elseif ctx.replay then
      r.kind, r.reason = "skipped", ("not in the result store's latest run on %s (strategy replay)"):format(ctx.device_key)
    else
      fresh[#fresh + 1] = r
      if r.prog then with_prog[#with_prog + 1] = r end
    end
  end
  local t0 = now_s()
  local done, step = 0, ctx.step
  if #with_prog > 1 and ctx.jobs > 1 and S.script and os.getenv("CUASYNC_CACHE") ~= "0" and pcall(require, "dkjson") then
    if not ctx.pool then   -- made once, for the whole sweep; a worker that died is a note in S.notes
      ctx.pool, S.notes = workers.pool(S, ctx.jobs), S.notes or {}
      for _, d in ipairs(ctx.pool.deaths) do S.notes[#S.notes + 1] = d end
      ctx.pool.deaths = S.notes
    end
    S.compile_workers = ctx.pool.spawned
    workers.pool_compile(ctx.pool, with_prog, function() done = done + 1; step("compiled", done, #with_prog) end)
  end
  done = 0
  for _, r in ipairs(with_prog) do
    local ok, ms, hit, entry = pcall(runner.compile_one, r.prog)
    if not ok then r.kind, r.reason = "failed", "compile: " .. tostring(ms)
    else
      if not r.compile_ms then r.compile_ms, r.cache = ms, hit end
      runner.resources(S, r, entry)
    end
    done = done + 1
    step("compiled", done, #with_prog)
  end
  S.compile_s = (S.compile_s or 0) + now_s() - t0
  local todo = {}
  for _, r in ipairs(fresh) do if r.kind == "measured" then todo[#todo + 1] = r end end
  if #todo == 0 then return todo end
  if not ctx.can_measure then
    for _, r in ipairs(todo) do r.kind, r.reason = "skipped", "launches skipped: " .. ctx.why end
    S.skipped_launches = ctx.why
    return {}
  end
  local n, base = 0, nil
  local mstep = function() n = n + 1; step("measured", n, #todo) end
  if #ctx.gpus > 1 and #todo > 1 and S.script then
    base = workers.measure(S, todo, ctx.gpus, mstep, ctx.best_cost)
  else
    base = runner.measure(S, todo, mstep, ctx.gpus[1], ctx.best_cost)
  end
  S.baseline_row = base or S.baseline_row
  return todo
end

-- Compile workers by default: one per core, at most 16 (they never bring up the driver).
local cores
function M.default_jobs()
  if not cores then
    local p = io.popen("nproc 2>/dev/null")
    cores = tonumber(p and p:read("*l") or "") or 4
    if p then p:close() end
  end
  return math.max(1, math.min(cores, 16))
end

-- S:run's options checked; returns jobs, shard i, shard n.
function M.options(where, o)
  util.kind(where, "argument", o, "table")
  util.known_fields(where, o, { jobs = true, gpus = true, force = true, shard = true, quiet = true, strategy = true,
                                budget = true, seed = true, replay = true, slurm = true })
  M.check(where, o)
  for _, f in ipairs({ "force", "quiet", "replay" }) do
    if o[f] ~= nil and type(o[f]) ~= "boolean" then util.fail(where, ("%s must be true or false (got %s)"):format(f, util.describe(o[f]))) end
  end
  local jobs = util.int_in(where, "jobs", o.jobs or M.default_jobs(), 1, 256)
  return jobs, parse_shard(where, o.shard)
end

local run

function M.run(S, o)
  local where = "sweep.run"
  o = o or {}
  local jobs, shard_i, shard_n = M.options(where, o)
  if o.slurm ~= nil then util.fail(where, "slurm is handled by S:run (cuasync.sweep), not here") end
  local task = workers.task()
  if task then workers.serve(S, task, S.space) end
  -- Ctrl-C is counted while the sweep runs: once cancels the running watched kernel, twice
  -- stops the sweep (its rows are returned, so the caller still writes them)
  native.C.cuasync_interrupt_begin()
  local ctx = {}
  local ok, err = pcall(run, S, o, where, jobs, shard_i, shard_n, ctx)
  workers.pool_close(ctx.pool)
  native.C.cuasync_interrupt_end()
  if not ok then error(err, 0) end
  return S
end

run = function(S, o, where, jobs, shard_i, shard_n, ctx)
  local strategy = o.strategy or S.defaults.strategy or "exhaustive"
  local budget = o.budget or S.defaults.budget
  local seed = o.seed or S.defaults.seed or 1
  local t0 = now_s()
  local gpu_ok, why = device.available()
  ctx.jobs, ctx.force, ctx.can_measure, ctx.why = jobs, o.force, gpu_ok or S.host, why
  ctx.replay, ctx.step = strategy == "replay" or o.replay == true, progress.new(S.name, o.quiet)
  local rows, by, candidates = {}, {}, {}
  S.rows, S.best, S.baseline_row, S.compile_s, S.skipped_launches, S.compile_workers, S.notes = rows, nil, nil, 0, nil, nil, nil
  S.shard = shard_i and ("%d/%d"):format(shard_i, shard_n) or nil
  for i = 1, S.space:count() do
    if not shard_i or (i - 1) % shard_n == shard_i - 1 then
      local r = { index = i, params = S.space:point(i), kind = "measured" }
      rows[#rows + 1], by[i] = r, r
      if runner.admit(S, r) then candidates[#candidates + 1] = i end
    end
  end
  if #rows == 0 then util.fail(where, "the shard holds no point of the cross product") end

  -- the result store: rows measured before on this device, driver and program
  local st = store.load(S.name)
  if st.problem then S.notes = { st.problem } end   -- said once, plainly; the sweep measures on
  ctx.entries = st.entries
  S.damaged, S.store_old, S.store_path = st.damaged, st.old, st.path
  ctx.device_key = S.host and "host" or "none"
  if gpu_ok and not S.host then
    local dev = device.open(0)
    ctx.device_key = store.device_key(dev)
    S.device_name = dev.name
  elseif ctx.replay and not S.host then   -- no GPU here: replay the latest run stored for any device
    local at = -1
    for k, run in pairs(st.runs) do
      if k ~= "host" and type(run) == "table" and (run.at or 0) > at then ctx.device_key, at = k, run.at or 0 end
    end
  end
  ctx.replayed = ctx.replay and latest(st, ctx.device_key, S) or nil
  for _, i in ipairs(candidates) do
    local r = by[i]
    local ok, key = true, "-"
    if r.prog then ok, key = pcall(compiler.key, r.prog, r.prog:arch()) end
    r.key = store.key(ctx.device_key, ok and key or "-", common.params_text(S.order, r.params))
  end
  ctx.gpus = (not S.host and gpu_list(where, o.gpus, gpu_ok)) or { 0 }
  if not S.host and ctx.can_measure and not ctx.replay then device.open(ctx.gpus[1]) end

  -- the search: batches chosen by the strategy until it is done or the budget is spent
  local chooser = STRATEGY[strategy]({ candidates = candidates, space = S.space, rng = rng.new(seed), batch = budget and math.max(jobs, 8) or nil })
  local seen, evaluated, stopped = {}, 0, nil
  local measured_now = {}
  while true do
    if runner.interrupts() >= 2 then stopped = "stopped by Ctrl-C (twice)" break end
    if budget and budget.seconds and now_s() - t0 >= budget.seconds then stopped = ("budget of %g s reached"):format(budget.seconds) break end
    local batch = chooser:next(seen)
    if not batch or #batch == 0 then break end
    if budget and budget.points and evaluated + #batch > budget.points then
      for k = #batch, budget.points - evaluated + 1, -1 do batch[k] = nil end
      stopped = ("budget of %d points reached"):format(budget.points)
    end
    if #batch == 0 then break end
    local list = {}
    for k, i in ipairs(batch) do list[k] = by[i] end
    for _, r in ipairs(evaluate(S, ctx, list)) do measured_now[#measured_now + 1] = r end
    for _, r in ipairs(list) do
      local ok = r.kind == "measured" and r.verified ~= false
      seen[r.index] = ok and common.figure(r) or false
      if ok and r.cost and not r.slow and (not ctx.best_cost or r.cost < ctx.best_cost) then ctx.best_cost = r.cost end
    end
    evaluated = evaluated + #list
    if stopped then break end
  end
  local missing = 0
  for _, i in ipairs(candidates) do
    if seen[i] == nil then
      missing = missing + 1
      by[i].kind, by[i].reason = "skipped", runner.interrupts() >= 2 and "not run: the sweep was stopped by Ctrl-C (twice)" or ("not sampled (strategy %s%s)"):format(strategy,
        budget and (", budget " .. (budget.points and (budget.points .. " points") or "") ..
          (budget.points and budget.seconds and ", " or "") .. (budget.seconds and (budget.seconds .. " s") or "")) or "")
    end
  end
  S.strategy, S.seed, S.evaluated = strategy, strategy ~= "exhaustive" and strategy ~= "replay" and seed or nil, evaluated
  S.complete = missing == 0
  S.stopped = not S.complete and ((stopped or "the strategy stopped") .. (": %d of %d candidate points not sampled"):format(missing, #candidates)) or nil

  -- the winner, measured again alone; then the next, should it fall behind (at most REMEASURE)
  if ctx.can_measure and not ctx.replay and #measured_now > 1 and runner.interrupts() < 2 then
    for _ = 1, M.REMEASURE do
      local best = common.best(rows)
      if not best or best.cached or best.remeasured then break end
      local ok, res = runner.remeasure(S, best, ctx.gpus[1])
      if ok then S.baseline_row = res or S.baseline_row
      else best.kind, best.reason = "failed", "re-measured alone: " .. tostring(res) end
    end
  end

  -- keep what was measured, and this run's rows (what cuasync.sweep.best ranks)
  if ctx.can_measure and not ctx.replay then
    local keys, fresh = {}, {}
    for _, r in ipairs(measured_now) do
      if r.kind == "measured" and r.key then fresh[r.key] = store.entry(r) end
    end
    for _, r in ipairs(rows) do
      if r.kind == "measured" and r.key and (fresh[r.key] or st.entries[r.key]) then keys[#keys + 1] = r.key end
    end
    local note = store.save(S.name, { entries = fresh, runs = { [ctx.device_key] = { at = os.time(), keys = keys } } })
    if note and st.problem and S.notes[1] == st.problem then S.notes[1] = note   -- what became of it
    elseif note then S.notes = S.notes or {} S.notes[#S.notes + 1] = note end
  end
  for _, r in ipairs(rows) do r.prog, r.cost = nil, nil end   -- r.key stays: merge joins rows by it
  S.best = common.best(rows)
  S.at = os.time()
  S.wall_s = now_s() - t0
  return S
end

return M
