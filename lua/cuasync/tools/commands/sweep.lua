-- cuasync sweep SCRIPT.lua: run the sweep a script returns; --merge joins result files.
-- The script is loaded first, so that its own options (cli.script{...}) are parsed in one pass
-- with the command's; a script that declares none gets the command's options alone.
local cli = require("cuasync.tools.cli")
local rules = require("cuasync.tools.sweep.rules")
local errors = require("cuasync.errors")
local method = require("cuasync.tools.sweep.method")
local row = require("cuasync.tools.sweep.row")
local rule = rules.option

-- --param NAME=V1,V2 -> { name, values }
local function param(v)
  local name, vs = v:match("^([%a_][%w_]*)=(.+)$")
  if not name then return nil, "is not NAME=V1,V2" end
  local values = {}
  for x in (vs .. ","):gmatch("([^,]*),") do
    if x == "" then return nil, "has an empty value (NAME=V1,V2 with no empty item)" end
    values[#values + 1] = cli.value(x)
  end
  return { name, values, text = v }
end

-- --gpus all | 0,1 (an example on its own reads its --gpus with it too)
local function gpus(v)
  local t = v == "all" and v or cli.types.ints(v)
  for _, d in ipairs(type(t) == "table" and t or {}) do if d < 0 then t = nil end end
  return t, "is not all or a comma list of device ordinals (0, 1, ...)"
end

local function shard(v)
  local i, n = v:match("^(%d+)/(%d+)$")
  i, n = tonumber(i), tonumber(n)
  if i and n and i >= 1 and i <= n then return v end
  return nil, "is not I/N with 1 <= I <= N"
end

local M = {
  name = "sweep",
  summary = "run the sweep SCRIPT returns (a cuasync.sweep or its table); --merge joins results",
  usage = { "SCRIPT.lua [options]", "--merge A.json B.json... [options]" },
  about = [[
  SCRIPT.lua returns the table cuasync.sweep takes, or the sweep cuasync.sweep{...} made (in it,
  cuasync.sweep.main() is false: the command runs the sweep; examples/sweep_command.lua), and may
  return a function after(S, o) second, called once the outputs are written. Options a script
  declares with cli.script{...} (every example's: cuasync sweep examples/NAME.lua --help) follow
  it, beside the command's.]],
  options = {
    "the points:",
    { "--param NAME=V1,V2", "replace a parameter's values (numbers, or strings)", many = true, type = param },
    { "--strategy NAME", "exhaustive, random, local or replay: which points are evaluated (random and local take --seed)",
      check = rule("strategy") },
    { "--budget-points N", "stop after N points: the best so far is kept and the sweep marked incomplete", type = "int",
      check = rule("budget.points") },
    { "--budget-seconds S", "stop after S seconds, likewise", type = "number", check = rule("budget.seconds") },
    { "--seed N", "the seed of the random and local strategies", type = "int", check = rule("seed") },
    { "--replay", "answer from the result store only (no GPU needed)" },
    { "--force", "measure again what the result store holds (with --slurm: submit every shard again)" },
    "where they run:",
    { "--gpus all|0,1", "the GPUs that measure (default: GPU 0)", type = gpus, check = rule("gpus") },
    { "--jobs N", "compile workers (default: one per core, at most 16)", type = "int", check = rule("jobs") },
    { "--shard I/N", "run every N-th point from the I-th (a job array covers a large space; --merge joins them)", type = shard },
    { "--quiet", "no progress lines" },
    { "--timeline WHICH", "best or all: the timeline of the winner or of every measured variant (S:run{ trace }: a separate traced run)",
      choices = { "best", "all" } },
    { "--auto-rounds", "rounds = \"auto\" for this run: more rounds for the leaders until the best is separated or max_rounds" },
    { "--warmup-ms N", "the warm-up before the first timed round of each batch, ms (default 300; 0: none)", type = "int" },
    { "--settle-ms N", "untimed runs before each variant's timed reps in each round, ms (default 200; 0: none)", type = "int" },
    { "--columns LIST", "more of the rows' columns in the table (sm_mhz,mem_mhz,power_w,temp_c,reasons,ceiling,of_copy,...)",
      type = "list" },
    "what is written:",
    { "--out DIR", "write NAME.csv, NAME.json and NAME.t4.json to DIR (made if missing)" },
    { "--csv FILE", "the rows as CSV" },
    { "--json FILE", "the sweep as JSON (what --merge joins)" },
    { "--t4 FILE", "the rows in the T4 format" },
    { "--plot FILE", "a chart: .svg (drawn in Lua), or .png (gnuplot; without it, .svg beside)" },
    { "--x NAME", "the plot's x axis" },
    { "--series NAME", "the plot's series" },
    { "--merge", "join the JSON files given (shards, earlier runs) instead of running a script" },
    "through Slurm:",
    { "--slurm", "submit the sweep as a Slurm job array of --shards shards and a merge job that depends on it" },
    { "--shards N", "the shards (default 4; never more than the points)", type = "int", check = rule("slurm.shards"), needs = "slurm" },
    { "--partition P", "the partition", check = rule("slurm.partition"), needs = "slurm" },
    { "--gpus-per-task N", "GPUs per array task (default 1, 0 for a host sweep)", type = "int", check = rule("slurm.gpus_per_task"),
      needs = "slurm" },
    { "--time T", "the time limit of a task (minutes, MM:SS, HH:MM:SS, D-HH[:MM[:SS]])", check = rule("slurm.time"), needs = "slurm" },
    { "--sbatch-arg OPT", "one more sbatch option (--opt=v)", many = true, check = rule("slurm.sbatch_args[]"), needs = "slurm" },
    { "--slurm-dir DIR", "the scripts and results (default cuasync-slurm/NAME); running again submits only the "
      .. "shards whose results are missing", check = rule("slurm.dir"), needs = "slurm" },
    { "--wait", "follow the jobs and print the merged table", needs = "slurm" },
    { "--poll-seconds S", "how often --wait asks Slurm", type = "number", check = rule("slurm.poll_s"), needs = "slurm" },
    { "--dry-run", "print the two scripts and submit nothing", needs = "slurm" },
  },
}

M.gpus = gpus

-- The sweep's outputs (o.out: DIR/NAME.csv, .json and .t4.json; o.csv, o.json, o.t4; o.plot with
-- o.x, o.series): every one that can be written is, before one error names those that could not.
function M.outputs(S, o)
  local errors = {}
  local function out(what, format, path, opts)
    local ok, e, note = pcall(S.write, S, format, path, opts)   -- note: a plot's SVG instead of a PNG
    if ok then cli.print(("wrote %s %s%s"):format(what, e, note and (": " .. note) or "")) else errors[#errors + 1] = tostring(e) end
  end
  if o.out then
    local ok, why = cli.mkdirs(o.out)
    if not ok then errors[#errors + 1] = "cuasync sweep: " .. why
    else
      out("CSV", "csv", o.out .. "/" .. S.name .. ".csv")
      out("JSON", "json", o.out .. "/" .. S.name .. ".json")
      out("T4", "t4", o.out .. "/" .. S.name .. ".t4.json")
    end
  end
  if o.csv then out("CSV", "csv", o.csv) end
  if o.json then out("JSON", "json", o.json) end
  if o.t4 then out("T4", "t4", o.t4) end
  if o.plot then out("plot", "plot", o.plot, { x = o.x, series = o.series }) end
  if #errors > 0 then error(table.concat(errors, "\n"), 0) end
  return S
end

-- What a Slurm submission without --wait (or a dry run) says.
local function submitted(S)
  local s = S.slurm
  if s.note then cli.print("note: " .. s.note) end
  if s.dry_run then
    cli.print(("# %s/array.sbatch\n%s\n# %s/merge.sbatch (submitted with --dependency=afterok:<the array's job id>)\n%s"):format(
      s.dir, s.script, s.dir, s.merge_script))
    cli.print(("dry run: nothing submitted (%d of %d shards would be)"):format(#s.submitted, s.shards))
    return
  end
  cli.print(("submitted %d of %d shards as Slurm job array %s%s, and the merge job %s (afterok:%s)"):format(#s.submitted, s.shards,
    s.array, s.kept > 0 and (" (%d kept from earlier runs)"):format(s.kept) or "", s.merge, s.array))
  cli.print(("results: %s/%s.json once the merge job ran; follow with squeue -j %s, or run the sweep again with --wait"):format(
    s.dir, S.name, s.array))
end

-- The sweep a script returned, its parameters replaced by --param, run as the options say.
local function run(o, spec, script)
  local sweep = require("cuasync.tools.sweep")
  local S = spec
  if getmetatable(spec) ~= sweep.Sweep then
    if type(spec) ~= "table" then
      error(("cuasync sweep: %s must return the table cuasync.sweep takes, or the sweep cuasync.sweep{...} made (got %s)"):format(
        script, spec == nil and "nothing" or type(spec)), 0)
    end
    S = sweep.new(spec)
  end
  -- its workers and Slurm tasks run this command again, with the same arguments
  S.script, S.args = cli.program, { unpack(cli.argv) }
  -- what only the script can check, checked before anything runs: a usage error, as the rest
  for _, p in ipairs(o.param) do
    local ok, err = pcall(S.set_param, S, p[1], p[2])
    if not ok then   -- the API's sentence, without its position (the launcher's) and its call's name
      cli.usage_error(M, ("--param %s: %s"):format(p.text, (errors.message(err):gsub("^[^\n]-:%d+: ", ""):gsub("^cuasync%.[%w_.]+: ", ""))))
    end
  end
  local bad = o.plot and require("cuasync.tools.report.plot").check(S, o.plot, { x = o.x, series = o.series })
  if bad and bad.field == "path" then cli.usage_error(M, ("--plot %s: %s"):format(o.plot, bad.message)) end
  if bad then cli.usage_error(M, ("--%s %s %s"):format(bad.field, bad.value, bad.rule)) end
  local bad, c = row.unknown_column(o.columns or {})   -- a misspelt column is said before the sweep runs
  if bad then
    cli.usage_error(M, ("--columns %s: %s is not a column (columns: %s)"):format(table.concat(o.columns, ","), c,
      table.concat(row.fields("column"), ", ")))
  end
  local budget = (o.budget_points or o.budget_seconds) and { points = o.budget_points, seconds = o.budget_seconds } or nil
  local slurm = o.slurm and { shards = o.shards, partition = o.partition, time = o.time, gpus_per_task = o.gpus_per_task,
    dir = o.slurm_dir, sbatch_args = #o.sbatch_arg > 0 and o.sbatch_arg or nil, wait = o.wait, dry_run = o.dry_run,
    poll_s = o.poll_seconds } or nil
  -- the reports a second Ctrl-C inside a variant that never returns writes as it ends the process
  local on_stop = {}
  if o.out and cli.mkdirs(o.out) then
    for _, f in ipairs({ { "csv", ".csv" }, { "json", ".json" }, { "t4", ".t4.json" } }) do
      on_stop[#on_stop + 1] = { f[1], o.out .. "/" .. S.name .. f[2] }
    end
  end
  for _, f in ipairs({ "csv", "json", "t4" }) do if o[f] then on_stop[#on_stop + 1] = { f, o[f] } end end
  for _, f in ipairs({ "warmup_ms", "settle_ms" }) do   -- the sweep's own rule, said as a usage error
    if o[f] then
      local ok, err = pcall(method.set_ms, S, f, o[f])
      if not ok then
        cli.usage_error(M, ("--%s %s: %s"):format(f:gsub("_", "-"), o[f], (errors.message(err):gsub("^[^\n]-:%d+: ", ""):gsub("^cuasync%.[%w_.]+: ", ""))))
      end
    end
  end
  S:run{ gpus = o.gpus, jobs = o.jobs, shard = o.shard, force = o.force, quiet = o.quiet, strategy = o.strategy,
         budget = budget, seed = o.seed, replay = o.replay, slurm = slurm, on_stop = on_stop,
         rounds = o.auto_rounds and "auto" or nil, trace = o.timeline }
  return S
end

-- What a run says and writes: the table, the Slurm line, the outputs, then the script's after(S, o).
-- An example that runs on its own ends through here too, so it says and writes the same both ways.
function M.report(S, o, after)
  cli.print(S:text{ columns = o.columns })
  if S.slurm then
    local s = S.slurm
    if s.note then cli.print("note: " .. s.note) end
    cli.print(("Slurm: %d shards%s, merged into %s%s"):format(s.shards,
      s.kept > 0 and (" (%d kept from earlier runs, %d submitted)"):format(s.kept, #s.submitted) or "", s.merged,
      s.wall_s and ("; %.1f s from submission to the merged file, the longest shard ran %.1f s (scheduler overhead %.1f s)"):format(
        s.wall_s, s.longest_s, s.overhead_s) or ": nothing was submitted"))
  end
  -- every output is written, and the script's after runs, before an error is raised: rows are never lost
  local ok, err = pcall(M.outputs, S, o)
  if after then after(S, o) end
  if not ok then error(err, 0) end
end

function M.main(argv)
  local merge = false
  for _, a in ipairs(argv) do merge = merge or a == "--merge" end
  -- the options before the script are the command's (rest: what follows the script is not read yet)
  local _, pos = cli.parse(setmetatable({ rest = true }, { __index = M }), argv)
  local o, args, spec, after
  if merge or #pos == 0 then
    o, args = cli.parse(M, argv)
  else
    local chunk, err = loadfile(pos[1])
    if not chunk then cli.fail(err) end
    local sweep = require("cuasync.tools.sweep")
    cli.loading, sweep.loading = { spec = M, argv = argv }, pos[1]   -- cuasync.sweep.main() is false in the script
    local ok, a, b = pcall(chunk)
    local L = cli.loading
    cli.loading, sweep.loading = nil, nil
    if not ok then cli.fail(a) end
    spec, after = a, b
    if after ~= nil and type(after) ~= "function" then
      cli.fail(("cuasync sweep: %s's second value must be a function after(S, o) (got %s)"):format(pos[1], type(after)))
    end
    if L.values then o, args = L.values, L.args else o, args = cli.parse(M, argv) end
  end
  if o.slurm and o.shard then cli.usage_error(M, "--slurm makes the shards itself: give --shards N, not --shard I/N") end
  if o.slurm and o.merge then cli.usage_error(M, "--slurm submits a sweep; --merge joins files: give one of them") end
  if o.merge and #args == 0 then cli.usage_error(M, "--merge needs the JSON files to join") end
  if not o.merge and #args ~= 1 then cli.usage_error(M, "give one script") end
  local S
  local ok, err = pcall(function()
    S = o.merge and require("cuasync.tools.sweep").merge(args) or run(o, spec, args[1])
    if S.slurm and not S.slurm.merged then return submitted(S) end
    M.report(S, o, after)
  end)
  -- what was printed is an output too: a full disk there fails the command like a file's would
  local written, why = cli.stdout_written()
  if not written then err = (ok and "" or tostring(err) .. "\n") .. "cuasync sweep: cannot write the standard output: " .. why end
  if not ok or not written then cli.fail(err) end
  if S and S.result and S.result.interrupted then   -- stopped by Ctrl-C twice: what was measured is written
    io.stderr:write("cuasync sweep: stopped by Ctrl-C (twice): the rows measured before are printed and written (exit 130)\n")
    os.exit(130)
  end
end

return M
