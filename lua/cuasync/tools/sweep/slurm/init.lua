-- Sweeps through Slurm: S:run{ slurm = { shards, partition, gpus_per_task, time, sbatch_args,
-- wait, dry_run, dir } } writes a job-array script (task i re-runs this script as shard i+1 of n
-- and writes DIR/shard_i.json), submits it with sbatch, submits a merge job that depends on it
-- (afterok) and, with wait, follows the array, reports each failed shard by its array index and
-- log, and fills S's rows from the merged file. Running the sweep again submits only the shards
-- whose results are missing. Slurm is the scheduler; nothing here schedules.
local util = require("cuasync.util")
local fs = require("cuasync.fs")
local json = require("cuasync.tools.json")
local isolate = require("cuasync.tools.isolate")
local streams = require("cuasync.stream")
local report = require("cuasync.tools.report")
local merge = require("cuasync.tools.sweep.merge")
local progress = require("cuasync.tools.sweep.progress")
local script = require("cuasync.tools.sweep.slurm.script")
local queue = require("cuasync.tools.sweep.slurm.queue")
local submit = require("cuasync.tools.sweep.slurm.submit")
local rules = require("cuasync.tools.sweep.rules")

local M = { queue = queue, script = script, submit = submit }
local WHERE = "sweep.run"
local FIELDS = { shards = true, partition = true, gpus_per_task = true, time = true, sbatch_args = true, wait = true,
                 dry_run = true, dir = true, poll_s = true }

-- The slurm table, checked (each field by its rule in ../rules.lua, which the command's
-- options read too), with its defaults.
function M.options(S, t)
  util.kind(WHERE, "slurm", t, "table")
  util.known_fields(WHERE, t, FIELDS, "slurm")
  local o = { shards = rules.check(WHERE, "slurm.shards", t.shards or 4),
              gpus_per_task = rules.check(WHERE, "slurm.gpus_per_task", t.gpus_per_task or (S.host and 0 or 1)),
              sbatch_args = {}, poll_s = rules.check(WHERE, "slurm.poll_s", t.poll_s or 2) }
  if t.partition ~= nil then o.partition = rules.check(WHERE, "slurm.partition", t.partition) end
  if t.time ~= nil then o.time = rules.check(WHERE, "slurm.time", t.time) end
  if t.sbatch_args ~= nil then
    util.list(WHERE, "slurm.sbatch_args", t.sbatch_args)
    for i, a in ipairs(t.sbatch_args) do
      o.sbatch_args[i] = rules.check(WHERE, "slurm.sbatch_args[]", a, ("slurm.sbatch_args[%d]"):format(i))
    end
  end
  for _, f in ipairs({ "wait", "dry_run" }) do
    if t[f] ~= nil and type(t[f]) ~= "boolean" then util.fail(WHERE, ("slurm.%s must be a boolean (got %s)"):format(f, util.describe(t[f]))) end
    o[f] = t[f] == true
  end
  o.dir = rules.check(WHERE, "slurm.dir", t.dir or ("cuasync-slurm/" .. S.name))
  return o
end

-- In an array task: the shard it runs and where its JSON goes (nil elsewhere).
function M.task()
  local shard, out = os.getenv("CUASYNC_SWEEP_SHARD"), os.getenv("CUASYNC_SWEEP_SHARD_JSON")
  if not shard then return nil end
  if not out or out == "" then util.fail(WHERE, "CUASYNC_SWEEP_SHARD is set but CUASYNC_SWEEP_SHARD_JSON is not: an array task writes its rows there") end
  return { shard = shard, json = out }
end

-- Serve an array task: run the shard (run is search.run), write its JSON, exit.
function M.serve(S, task, o, run)
  local copy = {}
  for k, v in pairs(o or {}) do copy[k] = v end
  copy.slurm, copy.shard, copy.quiet = nil, task.shard, true
  run(S, copy)
  S:write("json", task.json)
  print(("shard %s of sweep %s: %d rows in %.1f s, written to %s"):format(task.shard, S.name, #S.rows, S.result.wall_s, task.json))
  os.exit(0)
end

local shard_path = script.shard_path

-- The shard's document if DIR holds a whole one of this sweep, else nil.
local function shard_doc(S, dir, i, n)
  if fs.kind(shard_path(dir, i)) ~= "file" then return nil end
  local ok, doc = pcall(report.handler("json").read, shard_path(dir, i))
  if ok and doc.name == S.name and doc.shard == ("%d/%d"):format(i + 1, n) then return doc end
end

local function identity(S, n)
  return json.encode({ name = S.name, order = S.order, params = S.params, shards = n })
end

local function tail(path)
  local text = fs.read(path) or ""
  local last
  for line in text:gmatch("[^\n]+") do if line:find("%S") then last = line end end
  return last and (last:sub(1, 200)) or "(empty)"
end

local function now_s() return streams.now_ns() / 1e9 end

-- A file operation's result, or a named error before anything is submitted.
local checked = submit.checked
-- The paths of the n shards in DIR, all present and of the sweep the manifest names (the merge
-- job's input); a named error for a missing one.
function M.shard_paths(dir)
  local man = json.decode_file(dir .. "/manifest.json")
  if type(man) ~= "table" or type(man.shards) ~= "number" then
    util.fail("sweep.merge_job", ("%s/manifest.json is missing or not a Slurm sweep's manifest"):format(dir))
  end
  local paths, missing = {}, {}
  for i = 0, man.shards - 1 do
    if fs.kind(shard_path(dir, i)) == "file" then paths[#paths + 1] = shard_path(dir, i)
    else missing[#missing + 1] = tostring(i) end
  end
  if #missing > 0 then
    util.fail("sweep.merge_job", ("shards %s of %d have no results in %s"):format(table.concat(missing, ", "), man.shards, dir))
  end
  return paths, man
end

-- Follow the array until it leaves the queue, then the merge job; fill S from the merged file.
local function follow(S, sl, job, quiet)
  local step = progress.new(S.name, quiet)
  local total, failures = #job.indices, 0
  while true do
    local q, err = queue.queued({ job.array, job.merge })
    if not q then
      failures = failures + 1
      if failures >= 5 then util.fail(WHERE, ("squeue cannot say how job %s is doing: %s"):format(job.array, err)) end
    else
      failures = 0
      local left = 0
      for id in pairs(q) do if id:sub(1, #job.array + 1) == job.array .. "_" then left = left + 1 end end
      step("shards done", total - left, total)
      if left == 0 then break end
    end
    isolate.sleep(sl.poll_s)
  end
  local failed = {}
  for _, i in ipairs(job.indices) do
    if not shard_doc(S, sl.dir, i, sl.shards) then
      local id = ("%s_%d"):format(job.array, i)
      local state, code = queue.final(id)
      local log = ("%s/shard_%d.log"):format(sl.dir, i)
      failed[#failed + 1] = ("shard %d/%d (array index %d, job %s) %s, log %s: %s"):format(i + 1, sl.shards, i, id,
        state and (state .. " (exit " .. tostring(code) .. ")") or ("vanished: Slurm no longer knows job " .. id),
        log, tail(log))
    end
  end
  if #failed > 0 then
    queue.cancel(job.merge)
    util.fail(WHERE, ("%d of the %d shards submitted failed: %s. The other shards' results stay in %s; run the sweep again to submit only the missing shards (the merge job %s was cancelled)"):format(
      #failed, total, table.concat(failed, "; "), sl.dir, job.merge))
  end
  local merged = script.merged_path(sl.dir, S.name)
  while true do
    local q = queue.queued({ job.merge })
    if q and not q[job.merge] then break end
    isolate.sleep(sl.poll_s)
  end
  if fs.kind(merged) ~= "file" then
    local state, code = queue.final(job.merge)
    util.fail(WHERE, ("the merge job %s ended %s without writing %s: see %s/merge.log: %s"):format(job.merge,
      state and (state .. " (exit " .. tostring(code) .. ")") or "(Slurm no longer knows it)", merged, sl.dir, tail(sl.dir .. "/merge.log")))
  end
  return merged
end

-- Submit the sweep to Slurm (S:run{ slurm = ... }); returns S, with S.slurm saying what was done.
function M.run(S, o, sl)
  if o.shard ~= nil then util.fail(WHERE, "shard and slurm exclude each other: slurm makes the shards itself") end
  if not S.script then
    util.fail(WHERE, "a Slurm sweep's array tasks run the script that made the sweep again, and this sweep was not made from a script file")
  end
  local note
  if sl.shards > S.space:count() then   -- a shard without a point has nothing to run
    note = ("%d shards asked for, but the sweep has %d points: %d shards, one point each"):format(sl.shards, S.space:count(), S.space:count())
    sl.shards = S.space:count()
  end
  local cwd = os.getenv("PWD") or "."
  if sl.dir:sub(1, 1) ~= "/" then sl.dir = cwd .. "/" .. sl.dir end
  local have_sbatch = queue.which("sbatch")
  if not sl.dry_run and not have_sbatch then
    util.fail(WHERE, "slurm: sbatch is not on PATH: install Slurm's client (Debian: apt-get install slurm-client) and set SLURM_CONF to the cluster's slurm.conf, or run where Slurm is")
  end
  local man_path = sl.dir .. "/manifest.json"
  local man = fs.kind(man_path) == "file" and json.decode_file(man_path) or nil
  local id = identity(S, sl.shards)
  if type(man) == "table" and man.identity ~= id and not o.force then
    util.fail(WHERE, ("slurm: %s holds the shards of another sweep, or of another shard count (%s): give slurm.dir another directory, or force = true (--force) to start it over"):format(
      sl.dir, tostring(man.shards) .. " shards of " .. tostring(man.name)))
  end
  if type(man) ~= "table" then submit.foreign(S, sl) end   -- a directory no Slurm run made
  if type(man) ~= "table" or man.identity ~= id or o.force then man = { identity = id, name = S.name, shards = sl.shards, jobs = {} } end
  local last = man.jobs[#man.jobs]
  if last and have_sbatch then
    local q = queue.queued({ last.array })
    for qid in pairs(q or {}) do
      if qid:sub(1, #last.array + 1) == last.array .. "_" then
        util.fail(WHERE, ("slurm: shards of this sweep are still in Slurm's queue (job %s): wait for them (squeue -j %s) or cancel them (scancel %s) before submitting again"):format(
          last.array, last.array, last.array))
      end
    end
  end
  local missing = {}
  for i = 0, sl.shards - 1 do
    if o.force or not shard_doc(S, sl.dir, i, sl.shards) then missing[#missing + 1] = i end
  end
  local text = { name = S.name, dir = sl.dir, cwd = cwd, shards = sl.shards, indices = missing, partition = sl.partition,
                 time = sl.time, gpus_per_task = sl.gpus_per_task, sbatch_args = sl.sbatch_args,
                 lua = queue.which(os.getenv("LUAJIT") or "luajit") or "luajit",
                 lua_path = package.path, lua_cpath = package.cpath, argv = { S.script, unpack(S.args) } }
  S.slurm = { dir = sl.dir, shards = sl.shards, submitted = missing, kept = sl.shards - #missing, dry_run = sl.dry_run, note = note }
  local merged = script.merged_path(sl.dir, S.name)
  if #missing == 0 then   -- every shard is in: nothing to submit, the merge happens here
    local paths = M.shard_paths(sl.dir)
    merge.into(S, paths)
    S:write("json", merged)
    S:write("csv", ("%s/%s.csv"):format(sl.dir, S.name))
    S.slurm.merged = merged
    return S
  end
  S.slurm.script, S.slurm.merge_script = script.array(text), script.merge(text)
  if sl.dry_run then return S end   -- nothing made, not even the directory
  local made, why = fs.mkdirs(sl.dir)
  if not made then util.fail(WHERE, ("slurm: cannot make the directory %s: %s"):format(sl.dir, why)) end
  checked(fs.write_json(man_path, man, { atomic = true }))   -- the identity first: every file of ours beside it
  checked(fs.write(sl.dir .. "/array.sbatch", S.slurm.script))
  checked(fs.write(sl.dir .. "/merge.sbatch", S.slurm.merge_script))
  local t0 = now_s()
  local job = submit.jobs(S, sl, man, man_path, missing)
  S.slurm.array, S.slurm.merge = job.array, job.merge
  if not sl.wait then return S end
  follow(S, sl, job, o.quiet)
  merge.into(S, { merged })   -- its S.complete: false where a shard's rows are missing
  local longest, sum = 0, 0
  for i = 0, sl.shards - 1 do
    local doc = shard_doc(S, sl.dir, i, sl.shards)
    local w = doc and tonumber(doc.wall_s) or 0
    longest, sum = math.max(longest, w), sum + w
  end
  S.slurm.merged, S.slurm.wall_s, S.slurm.longest_s, S.slurm.shards_s = merged, now_s() - t0, longest, sum
  S.slurm.overhead_s = S.slurm.wall_s - longest
  return S
end

return M
