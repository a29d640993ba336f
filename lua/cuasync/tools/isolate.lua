-- Fresh processes: a sticky CUDA error, a hang or a crash there cannot touch the caller. A
-- consumer of the core: nothing in lua/cuasync/ requires it.
--   local ok, out, code = isolate.run(code[, { env = { K = "v" }, timeout_s = 60, root = "." }])
--   local codes = isolate.spawn({ { argv = { "luajit", "s.lua" }, env = {...}, log = path }, ... }, on_line)
local M = {}

local function shell_quote(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end
M.shell_quote = shell_quote

-- "K='v' K2='w'" for a command's environment, in a stable order.
local function env_prefix(env)
  local keys, out = {}, {}
  for k in pairs(env or {}) do keys[#keys + 1] = k end
  table.sort(keys)
  for _, k in ipairs(keys) do out[#out + 1] = ("%s=%s"):format(k, shell_quote(env[k])) end
  return table.concat(out, " ")
end

function M.run(code, opts)
  opts = opts or {}
  local root = opts.root or "."
  local file = os.tmpname()
  local f = assert(io.open(file, "w"))
  f:write(("package.path = %q .. package.path\n"):format(root .. "/lua/?.lua;" .. root .. "/lua/?/init.lua;"),
          ("package.cpath = %q .. package.cpath\n"):format(root .. "/build/?.so;"), code)
  f:close()
  local limit = opts.timeout_s and ("timeout -k 5 %d "):format(opts.timeout_s) or ""
  local p = io.popen(("env %s %sluajit %s 2>&1; echo \"exit=$?\""):format(env_prefix(opts.env), limit, file))
  local out = p:read("*a")
  p:close()
  os.remove(file)
  local rc = tonumber(out:match("exit=(%d+)%s*$"))
  return rc == 0, (out:gsub("exit=%d+%s*$", "")), rc
end

-- Start every job at once and wait for all. A job's stdout and stderr go to its log file; what
-- it writes to fd 3 comes back, line by line, to on_line (progress). Returns each job's exit code.
function M.spawn(jobs, on_line)
  local parts = {}
  for i, j in ipairs(jobs) do
    local argv = {}
    for k, a in ipairs(j.argv) do argv[k] = shell_quote(a) end
    parts[#parts + 1] = ("( env %s %s 3>&1 1>%s 2>&1; echo \"exit %d $?\" ) &"):format(env_prefix(j.env),
      table.concat(argv, " "), shell_quote(j.log or "/dev/null"), i)
  end
  local p = io.popen("sh -c " .. shell_quote(table.concat(parts, "\n") .. "\nwait"))
  local codes = {}
  for line in p:lines() do
    local w, rc = line:match("^exit (%d+) (%d+)$")
    if w then codes[tonumber(w)] = tonumber(rc) elseif on_line then on_line(line) end
  end
  p:close()
  return codes
end

-- The number of cores (nproc), 4 where it cannot be learnt.
local cores
function M.cores()
  if not cores then
    local p = io.popen("nproc 2>/dev/null")
    cores = tonumber(p and p:read("*l") or "") or 4
    if p then p:close() end
  end
  return cores
end

return M
