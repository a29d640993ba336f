-- Asking Slurm: sbatch, squeue, scontrol (sacct where accounting is on) and scancel, each through
-- isolate.command, with Slurm's own message kept for the error that names the call.
local isolate = require("cuasync.tools.isolate")

local M = {}

-- Output (stdout and stderr) and exit code of a command (an argv list, or a shell line).
function M.sh(cmd)
  local _, out, rc = isolate.command(cmd)
  return out, rc
end

-- The path of a command on PATH, or nil (a field, so that a spec can stand in for Slurm).
function M.which(name)
  return isolate.which(name)
end

-- sbatch --parsable [args] script: the job id, or nil and sbatch's message.
function M.submit(script, args)
  local argv = { "sbatch", "--parsable" }
  for _, a in ipairs(args or {}) do argv[#argv + 1] = a end
  argv[#argv + 1] = script
  local out, rc = M.sh(argv)
  local id = rc == 0 and out:match("^%s*(%d+)[;%s]")
  if not id then return nil, (out:gsub("%s+$", "")) end
  return id
end

-- The jobs (array tasks as "J_i", others as "J") of `ids` still in the queue, each with its
-- state; nil and the message when squeue cannot answer. A job Slurm no longer knows is absent.
function M.queued(ids)
  local out, rc = M.sh({ "squeue", "-h", "-r", "-j", table.concat(ids, ","), "-o", "%i %T" })
  if rc ~= 0 and not out:find("Invalid job id", 1, true) then return nil, (out:gsub("%s+$", "")) end
  local t = {}
  for id, state in out:gmatch("([%d_%[%]%-,]+) (%u[%u_]*)") do t[id] = state end
  return t
end

-- How a finished job (or array task "J_i") ended: state, exit code ("0:15"), or nil when Slurm
-- no longer knows it (scontrol forgets after MinJobAge; sacct remembers where accounting is on).
function M.final(id)
  local out, rc = M.sh({ "scontrol", "show", "job", "-o", id })
  if rc == 0 then
    local state = out:match("JobState=(%u[%u_]*)")
    if state then return state, out:match("ExitCode=([%d:]+)") end
  end
  out, rc = M.sh({ "sacct", "-n", "-P", "-X", "-j", id, "-o", "State,ExitCode" })
  if rc == 0 then
    local state, code = out:match("^(%u[%u_]*)[^|]*|([%d:]+)")
    if state then return state, code end
  end
  return nil
end

function M.cancel(id)
  M.sh({ "scancel", id })
end

return M
