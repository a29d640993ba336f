-- The compile service the runners use: a batch's programs compiled on the pool of worker
-- processes (workers.lua; made on first need, kept for the whole run so their NVRTC and
-- precompiled headers stay warm), then loaded here from the disk cache they filled; what the
-- pool missed is compiled here. Each row gets compile_ms, cache and its resources (registers,
-- spills; a spilling variant pruned under spills = "prune"); a failure fails the row.
local streams = require("cuasync.stream")
local workers = require("cuasync.tools.sweep.workers")
local measure = require("cuasync.tools.sweep.measure")
local row = require("cuasync.tools.sweep.row")

local M = {}
local Service = {}
Service.__index = Service

-- S: the sweep; jobs: compile workers at most; step(what, n, m): progress.
function M.new(S, jobs, step)
  return setmetatable({ S = S, jobs = jobs, step = step, seconds = 0 }, Service)
end

-- A pool pays only for several programs, with a script to re-run, a disk cache to share and
-- dkjson to talk through.
function Service:wants_pool(n)
  return n > 1 and self.jobs > 1 and self.S.script ~= nil and os.getenv("CUASYNC_CACHE") ~= "0" and pcall(require, "dkjson")
end

function Service:compile(rows)
  local S, step, t0 = self.S, self.step, streams.now_ns()
  local todo = {}
  for _, r in ipairs(rows) do if r.prog then todo[#todo + 1] = r end end
  if self:wants_pool(#todo) then
    if not self.pool then   -- a worker that died is a note of the run's (the pool appends there)
      self.pool = workers.pool(S, self.jobs)
      for _, d in ipairs(self.pool.deaths) do measure.note(S, d) end
      S.result.notes = S.result.notes or {}
      self.pool.deaths = S.result.notes
    end
    local done = 0
    workers.pool_compile(self.pool, todo, function() done = done + 1; step("compiled", done, #todo) end)
  end
  for k, r in ipairs(todo) do
    local ok, ms, hit, entry = pcall(measure.compile_one, r.prog)
    if not ok then
      row.set(r, "failed", "compile: " .. tostring(ms), "compile")
    else
      if not r.compile_ms then r.compile_ms, r.cache = ms, hit end
      measure.resources(S, r, entry)
    end
    step("compiled", k, #todo)
  end
  self.seconds = self.seconds + (streams.now_ns() - t0) / 1e9
  return rows
end

-- How many worker processes ran (nil: no pool).
function Service:workers() return self.pool and self.pool.spawned end

function Service:close()
  workers.pool_close(self.pool)
  self.pool = nil
end

return M
