-- cuasync.sweep: a parameter sweep in one call. Every point of the space ends as a row: measured
-- (time, GB/s or TFLOP/s, ratio to the baseline, verified), pruned (why, before any compile),
-- failed (compile, build, launch, verification, hang) or skipped (why, "not sampled" included).
-- Nothing is dropped silently.
--   local S = cuasync.sweep{ name = "copy", params = { stages = {2, 4, 8}, chunk = {4096, 16384} },
--     where = function(p) return p.stages * p.chunk <= 200000, "does not fit" end,
--     program = function(p) return cuasync.program{...} end,     -- compiled in parallel workers
--     build = function(p) return { run = run, verify = fn, poison = fn, bytes = n, flops = f, inflight = b,
--                                          stage_inflight = s } end,
--     baseline = { name = "cuMemcpyDtoD", run = fn, bytes = n, build = fn }, rounds = 5 | "auto", reps = 10,
--     max_rounds = 20, warmup_ms = 300, settle_ms = 200, spread_limit = 0.02, rotate = 1, timeout_ms = 5000,
--     strategy = "exhaustive", budget = { points = n, seconds = s }, seed = 1, flush_l2 = false,
--     spills = "keep" | "prune" }
--   S:run{ jobs = 8, gpus = "all" | {0, 1}, force = false, shard = "1/4", strategy, budget, seed, replay, on_stop,
--          trace = "best" | "all", rounds = n | "auto" }
--   S:print()  S:write("csv" | "json" | "t4" | "plot" | "text", path[, opts])  S:knee{ x, series, memory }
--   S.rows, S.best, S.complete, S.notes; the rest of the last run's record in S.result
-- The parts: space.lua (points), row.lua (the one row schema: fields, value rules, exact keys),
-- options.lua (S:run's options), method.lua (rounds, warm-up, spread, rotate), rules.lua (each option's rule, which the command reads too),
-- strategies/ (which points, in what order, loaded by name), runners/ (who answers a batch: in
-- this process, over GPUs, from the store, or nobody without a GPU), compile.lua (the compile
-- service they use), measure.lua (build, verify, time), stop.lua (Ctrl-C, and a run that ends
-- early), workers.lua (processes), store.lua and memo.lua (results kept between runs),
-- search.lua (the loop that joins them), knee.lua, merge.lua, slurm/; the reports are in
-- tools/report/.
local util = require("cuasync.util")
local report = require("cuasync.tools.report")
local row = require("cuasync.tools.sweep.row")
local space = require("cuasync.tools.sweep.space")
local options = require("cuasync.tools.sweep.options")
local workers = require("cuasync.tools.sweep.workers")
local store = require("cuasync.tools.sweep.store")
local search = require("cuasync.tools.sweep.search")
local knee = require("cuasync.tools.sweep.knee")
local merge = require("cuasync.tools.sweep.merge")
local slurm = require("cuasync.tools.sweep.slurm")
local method = require("cuasync.tools.sweep.method")

local M = {}
local Sweep = {}

-- A run's figures moved from the sweep into its record, S.result (the sweep is the definition;
-- S.rows, S.best, S.complete and S.notes stay). Scripts that read the old names still get the
-- value, with a warning once per name; the names go in a later release (CHANGELOG.md).
local MOVED = { baseline_row = "baseline", strategy = "strategy", seed = "seed", evaluated = "evaluated",
                stopped = "stopped", shard = "shard", wall_s = "wall_s", compile_s = "compile_s", at = "at",
                compile_workers = "compile_workers", skipped_launches = "skipped_launches", device_name = "device_name",
                damaged = "store.damaged", store_old = "store.old", store_path = "store.path" }
local warned = {}
Sweep.__index = function(S, k)
  local m = Sweep[k]
  if m ~= nil or MOVED[k] == nil then return m end
  if not warned[k] then
    warned[k] = true
    io.stderr:write(("cuasync.sweep: S.%s is deprecated: read S.result.%s\n"):format(k, MOVED[k]))
  end
  local R = rawget(S, "result")
  if not R then return nil end
  local a, b = MOVED[k]:match("^(%w+)%.(%w+)$")
  if a then return R[a] and R[a][b] end
  return R[MOVED[k]]
end

local FIELDS = options.SWEEP_FIELDS
local WHERE = "sweep"
local function fail(msg) util.fail(WHERE, msg) end

function M.new(spec)
  util.kind(WHERE, "argument", spec, "table")
  util.known_fields(WHERE, spec, FIELDS)
  local S = setmetatable({}, Sweep)
  S.name = store.check_name(WHERE, spec.name)
  S.space = space.new(WHERE, spec.params, spec.order)
  S.order, S.params = S.space.order, S.space.params
  for _, f in ipairs({ "where", "program" }) do
    if spec[f] ~= nil then util.kind(WHERE, f, spec[f], "function") end
  end
  util.kind(WHERE, "build", spec.build, "function")
  S.where, S.program, S.build = spec.where, spec.program, spec.build
  if spec.baseline ~= nil then
    util.kind(WHERE, "baseline", spec.baseline, "table")
    util.known_fields(WHERE, spec.baseline, { name = true, run = true, bytes = true, flops = true, build = true }, "baseline")
    util.cstring(WHERE, "baseline.name", spec.baseline.name)
    util.kind(WHERE, "baseline.run", spec.baseline.run, "function")
    if spec.baseline.build ~= nil then util.kind(WHERE, "baseline.build", spec.baseline.build, "function") end
    for _, f in ipairs({ "bytes", "flops" }) do
      local n = spec.baseline[f]
      if n ~= nil and (type(n) ~= "number" or n ~= n or n <= 0 or n == math.huge) then
        fail(("baseline.%s must be a finite positive number (got %s)"):format(f, util.describe(n)))
      end
    end
  end
  S.baseline = spec.baseline
  S.baseline_name = spec.baseline and spec.baseline.name
  S.timeout_ms = util.int_in(WHERE, "timeout_ms", spec.timeout_ms or 10000, 1, 3600 * 1000)
  if spec.unit ~= nil and spec.unit ~= "GB/s" and spec.unit ~= "TFLOP/s" then
    fail(('unit must be "GB/s" or "TFLOP/s" (got %s)'):format(util.describe(spec.unit)))
  end
  S.unit = spec.unit or "GB/s"
  -- host = true: run() is host work, timed with the host clock (no GPU needed: compile times, the
  -- CPU model, a reference implementation)
  for _, f in ipairs({ "host", "flush_l2" }) do
    if spec[f] ~= nil and type(spec[f]) ~= "boolean" then fail(("%s must be a boolean (got %s)"):format(f, type(spec[f]))) end
  end
  S.host, S.flush_l2 = spec.host == true, spec.flush_l2 == true
  method.set(WHERE, S, spec)   -- rounds, reps, max_rounds, warmup_ms, settle_ms, spread_limit, rotate
  if spec.spills ~= nil and spec.spills ~= "prune" and spec.spills ~= "keep" then
    fail(('spills must be "prune" (a variant that spills to local memory is pruned) or "keep" (got %s)'):format(util.describe(spec.spills)))
  end
  S.spills = spec.spills or "keep"
  if S.host and S.flush_l2 then fail("flush_l2 = true flushes a GPU's L2 between reps; a host = true sweep has none") end
  S.defaults = options.search(WHERE, { strategy = spec.strategy, budget = spec.budget, seed = spec.seed })
  S.script = spec.script or util.user_file()
  S.args = {}
  for i = 1, #(arg or {}) do S.args[i] = arg[i] end
  S.rows = {}
  return S
end

-- Every point of the space, in order (the last parameter varies fastest).
function Sweep:points() return self.space:points() end

-- Replace a parameter's values (the command line's --param name=v1,v2).
function Sweep:set_param(name, values)
  self.space:set(WHERE, name, values)
  self.params = self.space.params
end

function Sweep:label(p) return self.name .. " " .. row.params_text(self.order, p) end

-- What this process is for, decided once: a sweep's worker (compile pool or GPU share: serve it
-- and exit), a Slurm array task (run its shard), or the main process.
local function role()
  local task = workers.task()
  if task then return "worker", task end
  task = slurm.task()
  if task then return "shard", task end
  return "main"
end

-- search.run with this run's rounds (S:run{ rounds }), the sweep's own put back after it.
local function searched(S, o)
  local restore = method.override(WHERE .. ".run", S, type(o) == "table" and o.rounds or nil)
  local ok, res = pcall(search.run, S, o)
  restore()
  if not ok then error(res, 0) end
  return res
end

-- Run the sweep (search.lua): rows for every point, S.best, S.complete. Through Slurm with
-- o.slurm (slurm/); in a Slurm array task, its shard. A worker process serves its task first
-- (with the main process's method: workers.lua).
function Sweep:run(o)
  local what, task = role()
  if what == "worker" then return workers.serve(self, task, self.space) end
  if what == "shard" then return slurm.serve(self, task, o, searched) end
  if type(o) == "table" and o.slurm ~= nil then
    options.run(WHERE .. ".run", self, o)
    return slurm.run(self, o, slurm.options(self, o.slurm))
  end
  return searched(self, o)
end

-- o.columns: more of the row's columns in the table, by name (S:print{ columns = { "sm_mhz", "power_w" } })
function Sweep:text(o) return report.handler("text").text(self, o) end
function Sweep:print(o)
  print(self:text(o))   -- skipped launches are said there, once, with the reason
  return self
end

-- S:write(format, path[, opts]): one report handler per format (tools/report/).
function Sweep:write(format, path, o) return report.write(self, format, path, o) end
function Sweep:csv(path) return self:write("csv", path) end
function Sweep:json(path) return self:write("json", path) end
function Sweep:plot(path, o) return self:write("plot", path, o) end

-- S:knee{ x = "stages", series = "rows" | { ... }, memory = cuasync.probe.memory(dev) } (knee.lua)
function Sweep:knee(o) return knee.find(self, o) end

-- Join the JSON files of shards (or of earlier runs) into one sweep's rows (merge.lua).
function M.merge(paths) return merge.into(setmetatable({ rows = {} }, Sweep), paths) end

-- The Slurm merge job's work: DIR's shards joined into DIR/NAME.json and NAME.csv.
function M.merge_job(dir)
  local S = M.merge((slurm.shard_paths(dir)))
  print(("merged into %s and %s"):format(S:write("json", dir .. "/" .. S.name .. ".json"), S:write("csv", dir .. "/" .. S.name .. ".csv")))
  S:print()
end

-- cuasync.sweep.main(): false while `cuasync sweep S.lua` loads the script (the command runs the
-- sweep it returns), true when the script runs on its own (luajit S.lua, or its workers):
--   local S = cuasync.sweep{ ... }
--   if not cuasync.sweep.main() then return S end
--   S:run():print()
function M.main() return M.loading == nil end

-- cuasync.sweep.here(): the directory of the script that calls it (its own files, whoever runs
-- it: luajit, the command, a Slurm task), "." for a chunk that is not a file.
function M.here()
  local src = debug.getinfo(2, "S").source
  return src:sub(1, 1) == "@" and (src:sub(2):match("^(.*)/[^/]*$") or ".") or "."
end

-- cuasync.sweep.best(name[, { device = dev }]) -> params, row | nil, why (store.lua)
M.best = store.best

util.methods(Sweep, "sweep", "S")
M.Sweep = Sweep
return setmetatable(M, { __call = function(_, spec) return M.new(spec) end })
