-- Submitting a Slurm sweep's two jobs into its directory, touching only what cuasync made there:
-- a directory without the manifest of a Slurm run is refused when it holds a file of the names
-- cuasync writes (M.foreign); the results the jobs will write again (stale shards, the merged
-- file) are set aside, put back when sbatch refuses and removed once both jobs are in (M.jobs),
-- so that none passes for this run's and none is lost to a refusal; and sbatch's bare gres
-- refusal is said with what to do.
local util = require("cuasync.util")
local fs = require("cuasync.fs")
local script = require("cuasync.tools.sweep.slurm.script")
local queue = require("cuasync.tools.sweep.slurm.queue")

local M = {}
local WHERE = "sweep.run"

-- A file operation's result, or a named error before anything is submitted.
function M.checked(ok, why)
  if not ok then util.fail(WHERE, "slurm: " .. why .. " (nothing was submitted)") end
  return ok
end

-- Refuse a directory with no manifest.json that holds a file of a name a Slurm run writes: it
-- was not made by one (`--slurm-dir .` where the user keeps NAME.json), and is not ours to clear.
function M.foreign(S, sl)
  local names = { S.name .. ".json", S.name .. ".csv", "array.sbatch", "merge.sbatch", "merge.log" }
  for i = 0, sl.shards - 1 do names[#names + 1] = ("shard_%d.json"):format(i); names[#names + 1] = ("shard_%d.log"):format(i) end
  local there = {}
  for _, f in ipairs(names) do if fs.kind(sl.dir .. "/" .. f) ~= "missing" then there[#there + 1] = f end end
  if #there > 0 then
    util.fail(WHERE, ("slurm: %s holds %s, which no Slurm run of this sweep made (it has no manifest.json): give slurm.dir (--slurm-dir) a directory of its own"):format(
      sl.dir, table.concat(there, ", ")))
  end
end

-- What a Slurm of your own lacks to offer GPUs (docs/sweeps.md, "A single-node Slurm", writes these
-- lines; slurm_spec holds the page's recipe to them).
M.GRES_HINT = "A Slurm of your own offers them with three lines: GresTypes=gpu in slurm.conf, Gres=gpu:N on the node's NodeName line, and a gres.conf beside slurm.conf naming each device (Name=gpu File=/dev/nvidia0); docs/sweeps.md, \"A single-node Slurm\", writes them"

-- What sbatch's refusal of the array means, where Slurm leaves it bare.
local function refusal(sl, why)
  if why:find("Invalid generic resource", 1, true) and sl.gpus_per_task > 0 then
    return ("%s: the array asks for %d GPU%s per task (slurm.gpus_per_task, --gpus-per-task) and the cluster, or its partition, offers no gres/gpu: give a GPU partition (--partition), or 0 for a sweep that needs no GPU. %s"):format(
      why, sl.gpus_per_task, sl.gpus_per_task == 1 and "" or "s", M.GRES_HINT)
  end
  return why
end

-- Submit the array (its script in sl.dir) for the 0-based shards `missing`, then the merge job
-- after it; record both in the manifest (man, at man_path). Returns { array, merge, indices, at }.
function M.jobs(S, sl, man, man_path, missing)
  local stale = { script.merged_path(sl.dir, S.name) }
  for _, i in ipairs(missing) do stale[#stale + 1] = script.shard_path(sl.dir, i) end
  local aside = {}
  local function put_back()
    for k = #aside, 1, -1 do fs.rename(aside[k] .. ".resubmitted", aside[k]) end
  end
  for _, f in ipairs(stale) do
    if fs.kind(f) ~= "missing" then
      local ok, why = fs.rename(f, f .. ".resubmitted")
      if not ok then put_back() M.checked(nil, why) end
      aside[#aside + 1] = f
    end
  end
  local array, why = queue.submit(sl.dir .. "/array.sbatch")
  if not array then
    put_back()
    util.fail(WHERE, "slurm: sbatch refused the job array: " .. refusal(sl, why))
  end
  local mjob, mwhy = queue.submit(sl.dir .. "/merge.sbatch", { "--dependency=afterok:" .. array })
  if not mjob then
    queue.cancel(array)
    put_back()
    util.fail(WHERE, ("slurm: sbatch refused the merge job (the array %s was cancelled): %s"):format(array, mwhy))
  end
  for _, f in ipairs(aside) do fs.remove(f .. ".resubmitted") end
  local job = { array = array, merge = mjob, indices = missing, at = os.time() }
  man.jobs[#man.jobs + 1] = job
  local kept, kwhy = fs.write_json(man_path, man, { atomic = true })
  if not kept then   -- the jobs run, but a later run could not tell they were submitted
    queue.cancel(mjob); queue.cancel(array)
    util.fail(WHERE, ("slurm: %s (the array %s and the merge job %s were cancelled)"):format(kwhy, array, mjob))
  end
  return job
end

return M
