-- The runners: one interface, runner.run(S, rows, o) -> the rows measured now, the baseline
-- row. rows are compiled points still of kind "measured"; each leaves as a row of its kind.
--   process   built, verified and timed in this process (runners/process.lua)
--   gpus      shared out over several GPUs, a worker process each (runners/gpus.lua)
--   offline   nothing can launch here: compiled rows are skipped, saying why (runners/offline.lua)
--   replay    answered from the result store's latest run, nothing compiled (runners/replay.lua)
-- M.new makes the dispatcher of one run: per batch, stored rows are taken (unless force), the
-- rest compiled (compile.lua) and handed to the runner that fits.
local row = require("cuasync.tools.sweep.row")
local measure = require("cuasync.tools.sweep.measure")
local memo_mod = require("cuasync.tools.sweep.memo")
local trace = require("cuasync.trace")
local trace_buffer = require("cuasync.trace.buffer")

local M = { REMEASURE = 3, DRIFT = 2, DRIFT_MS = 0.05,   -- a winner alone vs in the rounds: further apart is a note
            process = require("cuasync.tools.sweep.runners.process"),
            gpus = require("cuasync.tools.sweep.runners.gpus"),
            offline = require("cuasync.tools.sweep.runners.offline"),
            replay = require("cuasync.tools.sweep.runners.replay") }
local Runs = {}
Runs.__index = Runs

-- S, its run's result R, and how this run measures: { replay, force, measure (true when a GPU
-- or a host sweep can run), why (when not), gpus (ordinals), memo, compiler, step }.
function M.new(S, R, o)
  return setmetatable({ S = S, R = R, o = o }, Runs)
end

-- The runner for n rows.
function Runs:pick(n)
  local o = self.o
  if o.replay then return M.replay end
  if not o.measure then return M.offline end
  if #o.gpus > 1 and n > 1 and self.S.script then return M.gpus end
  return M.process
end

-- Answer a batch of rows; returns the rows measured now.
function Runs:answer(batch)
  local S, o = self.S, self.o
  if o.replay then return (M.replay.run(S, batch, { memo = o.memo })) end
  local fresh = {}
  for _, r in ipairs(batch) do
    local e = o.measure and not o.force and o.memo:recall(r)
    if e then memo_mod.fill(r, e) else fresh[#fresh + 1] = r end
  end
  o.compiler:compile(fresh)
  local todo = {}
  for _, r in ipairs(fresh) do if r.kind == "measured" then todo[#todo + 1] = r end end
  if #todo == 0 then return todo end
  local n = 0
  local measured, base = self:pick(#todo).run(S, todo, { step = function() n = n + 1; o.step("measured", n, #todo) end,
    gpu = o.gpus[1], gpus = o.gpus, best_cost = self.best_cost, why = o.why })
  self.R.baseline = base or self.R.baseline
  return measured
end

-- An evaluated row seen by the search: the best time per unit of work so far (the early-exit bar
-- of later batches).
function Runs:seen(r)
  if row.ok(r) and r.cost and not r.slow and (not self.best_cost or r.cost < self.best_cost) then self.best_cost = r.cost end
end

-- A measured row's timeline: the variant built again with every program traced (trace.force),
-- run once, poisoned and verified, outside any timed round; its summary goes into the row
-- (stall_full, stall_empty, diagnosis). Returns true, or false and why (the row stays measured).
local function traced(S, r)
  local copy = row.new(r.index, r.params)
  trace_buffer.last_launch = nil   -- the build's own launch, or none
  local v, why = trace.force(true, function() return measure.try(S, copy) end)
  if not v then return false, why or copy.reason end
  local T = trace.last()
  if not T then return false, "its build launched no kernel built from a cuasync.program" end
  local s = T:summary()
  r.stall_full, r.stall_empty, r.diagnosis = s.consumer_full, s.producer_empty, s.diagnosis
  return true
end

-- The timelines the run asked for (S:run{ trace = "best" | "all" }), after every timed round.
function Runs:trace(rows, mode)
  local list = mode == "all" and rows or { row.best(rows) }
  for _, r in ipairs(list) do
    if r and row.ok(r) and not r.cached then
      local ok, why = traced(self.S, r)
      if not ok then measure.note(self.S, ("no timeline for #%d: %s"):format(r.index, tostring(why))) end
    end
  end
end

-- The winner measured again alone; then the next, should it fall behind (at most REMEASURE).
function Runs:remeasure(rows)
  local o = self.o
  for _ = 1, M.REMEASURE do
    local best = row.best(rows)
    if not best or best.cached or best.remeasured then break end
    local ok, res = measure.remeasure(self.S, best, o.gpus[1])
    if ok then self.R.baseline = res or self.R.baseline
    else row.set(best, "failed", "re-measured alone: " .. tostring(res), "remeasure") end
    -- far apart: the speed changed under the sweep (H200: 45.6 ms in the rounds, 3.56 ms alone);
    -- not below DRIFT_MS, where a run's own jitter is of that order (an empty host function)
    local alone, rounds = ok and best.ms, best.remeasured
    if alone and rounds and math.min(alone, rounds) >= M.DRIFT_MS and math.max(alone, rounds) > M.DRIFT * math.min(alone, rounds) then
      measure.note(self.S, ("#%d ran %.4f ms re-measured alone and %.4f ms in the sweep's rounds (%.2fx): the speed changed during the sweep (the GPU's clocks, another process?); the rounds' figures are not to be trusted: run it again"):format(
        best.index, alone, rounds, math.max(alone, rounds) / math.min(alone, rounds)))
    end
  end
end

return M
