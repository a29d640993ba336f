-- S:run's options, checked once, before anything runs: { jobs, gpus, force, shard, quiet,
-- strategy, budget, seed, replay, slurm, on_stop, trace, rounds } (M.RUN_FIELDS). The sweep's own defaults
-- (strategy, budget, seed) pass through M.search; the rest is a run's.
local util = require("cuasync.util")
local device = require("cuasync.device")
local isolate = require("cuasync.tools.isolate")
local rules = require("cuasync.tools.sweep.rules")
local stop = require("cuasync.tools.sweep.stop")

local M = {}

-- The fields cuasync.sweep{...} takes, and those S:run{...} takes: the one lists (init.lua and
-- M.run check against them; docs_spec holds docs/reference.md and docs/sweeps.md to them).
M.SWEEP_FIELDS = { name = true, params = true, order = true, where = true, program = true, build = true,
                   baseline = true, rounds = true, reps = true, timeout_ms = true, unit = true, script = true,
                   host = true, strategy = true, budget = true, seed = true, flush_l2 = true, spills = true,
                   warmup_ms = true, settle_ms = true, spread_limit = true, max_rounds = true, rotate = true }
M.RUN_FIELDS = { jobs = true, gpus = true, force = true, shard = true, quiet = true, strategy = true,
                 budget = true, seed = true, replay = true, slurm = true, on_stop = true, trace = true, rounds = true }

-- Check { strategy, budget, seed } (a sweep's defaults or run's options); returns them. The
-- rules are rules.lua's, which the command's options read too.
function M.search(where, t)
  if t.strategy ~= nil then rules.check(where, "strategy", t.strategy) end
  if t.budget ~= nil then
    util.kind(where, "budget", t.budget, "table")
    util.known_fields(where, t.budget, { points = true, seconds = true }, "budget")
    if t.budget.points == nil and t.budget.seconds == nil then util.fail(where, "budget must give points, seconds or both") end
    if t.budget.points ~= nil then rules.check(where, "budget.points", t.budget.points) end
    if t.budget.seconds ~= nil then rules.check(where, "budget.seconds", t.budget.seconds) end
  end
  if t.seed ~= nil then rules.check(where, "seed", t.seed) end
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
  return { i = i, n = n }
end

-- gpus checked: nil, "all" or a list of ordinals (a host sweep's too: it uses none, but a wrong
-- value is a mistake all the same).
local function check_gpus(where, g)
  if g == nil or g == "all" then return g end
  if type(g) ~= "table" then util.fail(where, ('gpus must be "all" or a list of GPU ordinals (got %s)'):format(util.describe(g))) end
  util.list(where, "gpus", g)
  for i, d in ipairs(g) do rules.check(where, "gpu", d, ("gpus[%d]"):format(i)) end
  return g
end

-- The GPUs to measure on: nil (the current one), or a list of ordinals.
function M.gpus(where, g, available)
  if check_gpus(where, g) ~= "all" then return g end
  if not available then return nil end
  local t = {}
  for i = 0, device.count() - 1 do t[#t + 1] = i end
  return t
end

-- Compile workers by default: one per core, at most 16 (they never bring up the driver).
function M.default_jobs() return math.max(1, math.min(isolate.cores(), 16)) end

-- S:run's options checked, with the sweep's defaults filled in: { jobs, shard = { i, n } | nil,
-- strategy, budget, seed, force, quiet, replay, gpus (checked; "all" resolved by M.gpus), slurm }.
function M.run(where, S, o)
  util.kind(where, "argument", o, "table")
  util.known_fields(where, o, M.RUN_FIELDS)
  if o.trace ~= nil and o.trace ~= "best" and o.trace ~= "all" then
    util.fail(where, ('trace must be "best" (the winner\'s timeline) or "all" (every measured variant\'s) (got %s)'):format(util.describe(o.trace)))
  end
  M.search(where, o)
  for _, f in ipairs({ "force", "quiet", "replay" }) do
    if o[f] ~= nil and type(o[f]) ~= "boolean" then util.fail(where, ("%s must be true or false (got %s)"):format(f, util.describe(o[f]))) end
  end
  if o.on_stop ~= nil then   -- { { format, path } }: the reports a hard stop writes (stop.lua)
    util.list(where, "on_stop", o.on_stop)
    for i, out in ipairs(o.on_stop) do
      if type(out) ~= "table" or not stop.FORMATS[out[1]] or type(out[2]) ~= "string" then
        util.fail(where, ('on_stop[%d] must be { format, path } with a format of csv, json, t4 or text (got %s)'):format(i, util.describe(out)))
      end
    end
  end
  local d = S and S.defaults or {}
  local strategy = o.strategy or d.strategy or "exhaustive"
  return { jobs = rules.check(where, "jobs", o.jobs or M.default_jobs()), shard = parse_shard(where, o.shard),
           strategy = strategy, replay = o.replay == true or strategy == "replay",
           budget = o.budget or d.budget, seed = o.seed or d.seed or 1, force = o.force == true, quiet = o.quiet,
           gpus = check_gpus(where, o.gpus), slurm = o.slurm, on_stop = o.on_stop, trace = o.trace }
end

return M
