-- Asking Slurm: sbatch, squeue, scontrol (sacct where accounting is on) and scancel, each through
-- the shell, with Slurm's own message kept for the error that names the call.
local shell_quote = require("cuasync.tools.isolate").shell_quote

local M = {}

-- Output (stdout and stderr) and exit code of a command line.
function M.sh(cmd)
  local p = io.popen(cmd .. " 2>&1; echo \"rc=$?\"")
  local out = p:read("*a")
  p:close()
  local rc = tonumber(out:match("rc=(%d+)%s*$"))
  return (out:gsub("rc=%d+%s*$", "")), rc
end

-- The path of a command on PATH, or nil.
function M.which(name)
  local out, rc = M.sh("command -v " .. shell_quote(name))
  if rc ~= 0 then return nil end
  return (out:gsub("%s+$", ""))
end

-- sbatch --parsable [args] script: the job id, or nil and sbatch's message.
function M.submit(script, args)
  local q = {}
  for _, a in ipairs(args or {}) do q[#q + 1] = shell_quote(a) end
  local out, rc = M.sh(("sbatch --parsable %s %s"):format(table.concat(q, " "), shell_quote(script)))
  local id = rc == 0 and out:match("^%s*(%d+)[;%s]")
  if not id then return nil, (out:gsub("%s+$", "")) end
  return id
end

-- The jobs (array tasks as "J_i", others as "J") of `ids` still in the queue, each with its
-- state; nil and the message when squeue cannot answer. A job Slurm no longer knows is absent.
function M.queued(ids)
  local out, rc = M.sh(("squeue -h -r -j %s -o '%%i %%T'"):format(table.concat(ids, ",")))
  if rc ~= 0 and not out:find("Invalid job id", 1, true) then return nil, (out:gsub("%s+$", "")) end
  local t = {}
  for id, state in out:gmatch("([%d_%[%]%-,]+) (%u[%u_]*)") do t[id] = state end
  return t
end

-- How a finished job (or array task "J_i") ended: state, exit code ("0:15"), or nil when Slurm
-- no longer knows it (scontrol forgets after MinJobAge; sacct remembers where accounting is on).
function M.final(id)
  local out, rc = M.sh("scontrol show job -o " .. shell_quote(id))
  if rc == 0 then
    local state = out:match("JobState=(%u[%u_]*)")
    if state then return state, out:match("ExitCode=([%d:]+)") end
  end
  out, rc = M.sh(("sacct -n -P -X -j %s -o State,ExitCode"):format(shell_quote(id)))
  if rc == 0 then
    local state, code = out:match("^(%u[%u_]*)[^|]*|([%d:]+)")
    if state then return state, code end
  end
  return nil
end

function M.cancel(id)
  M.sh("scancel " .. shell_quote(id))
end

return M
