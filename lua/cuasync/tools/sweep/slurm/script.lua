-- The text of the two batch scripts a Slurm sweep submits: the job array (task i runs shard i+1
-- of n of the same script, with the same arguments and cache rules, and writes DIR/shard_i.json)
-- and the merge job that joins the shards (submitted with --dependency=afterok on the array).
local shell_quote = require("cuasync.tools.isolate").shell_quote

local M = {}

-- The files of a Slurm run's directory: shard i's results (0-based, as the array's index), and
-- the merged results.
function M.shard_path(dir, i) return ("%s/shard_%d.json"):format(dir, i) end
function M.merged_path(dir, name) return ("%s/%s.json"):format(dir, name) end

-- "0,2-3" for the 0-based indices { 0, 2, 3 }.
function M.ranges(indices)
  local out, i = {}, 1
  while i <= #indices do
    local j = i
    while j < #indices and indices[j + 1] == indices[j] + 1 do j = j + 1 end
    out[#out + 1] = j > i and ("%d-%d"):format(indices[i], indices[j]) or tostring(indices[i])
    i = j + 1
  end
  return table.concat(out, ",")
end

-- The #SBATCH lines both scripts share: where they run and what they may use.
local function common(o, lines)
  lines[#lines + 1] = "#SBATCH --chdir=" .. o.cwd
  if o.partition then lines[#lines + 1] = "#SBATCH --partition=" .. o.partition end
  if o.time then lines[#lines + 1] = "#SBATCH --time=" .. o.time end
end

local function environment(o, lines)
  lines[#lines + 1] = ("export LUA_PATH=%s LUA_CPATH=%s"):format(shell_quote(o.lua_path), shell_quote(o.lua_cpath))
end

-- o: { name, dir, cwd, shards, indices (0-based), partition, time, gpus_per_task, sbatch_args,
--      lua, lua_path, lua_cpath, argv (the script and its arguments) }
function M.array(o)
  local l = { "#!/bin/bash",
    ("# cuasync sweep %s: %d shards as a Slurm job array (written by cuasync; running the sweep again"):format(o.name, o.shards),
    "# with --slurm submits only the shards whose results are missing)",
    "#SBATCH --job-name=cuasync-" .. o.name,
    "#SBATCH --array=" .. M.ranges(o.indices),
    "#SBATCH --output=" .. o.dir .. "/shard_%a.log" }
  common(o, l)
  if o.gpus_per_task > 0 then
    l[#l + 1] = "#SBATCH --ntasks=1"
    l[#l + 1] = "#SBATCH --gpus-per-task=" .. o.gpus_per_task
  end
  for _, a in ipairs(o.sbatch_args) do l[#l + 1] = "#SBATCH " .. a end
  l[#l + 1] = "set -eu"
  environment(o, l)
  l[#l + 1] = ("export CUASYNC_SWEEP_SHARD=\"$((SLURM_ARRAY_TASK_ID + 1))/%d\""):format(o.shards)
  l[#l + 1] = ("export CUASYNC_SWEEP_SHARD_JSON=%s/shard_${SLURM_ARRAY_TASK_ID}.json"):format(shell_quote(o.dir))
  local argv = { shell_quote(o.lua) }
  for _, a in ipairs(o.argv) do argv[#argv + 1] = shell_quote(a) end
  l[#l + 1] = "exec " .. table.concat(argv, " ")
  return table.concat(l, "\n") .. "\n"
end

-- The merge job: runs once the whole array succeeded (the dependency is given to sbatch).
function M.merge(o)
  local l = { "#!/bin/bash",
    ("# cuasync sweep %s: joins the %d shards into %s/%s.json and .csv (written by cuasync)"):format(o.name, o.shards, o.dir, o.name),
    "#SBATCH --job-name=cuasync-" .. o.name .. "-merge",
    "#SBATCH --output=" .. o.dir .. "/merge.log" }
  common(o, l)
  l[#l + 1] = "set -eu"
  environment(o, l)
  l[#l + 1] = ("exec %s -e %s"):format(shell_quote(o.lua),
    shell_quote(("require(%q).merge_job(%q)"):format("cuasync.tools.sweep", o.dir)))
  return table.concat(l, "\n") .. "\n"
end

return M
