-- The one place that starts a process (DESIGN.md "Layers"): fresh LuaJIT processes, where a
-- sticky CUDA error, a hang or a crash cannot touch the caller, and the commands the tools run
-- (Slurm's, gnuplot, nproc) or feed (the compile workers). A consumer of the core: nothing in
-- lua/cuasync/ requires it.
--   local ok, out, code = isolate.run(code[, { env = { K = "v" }, timeout_s = 60, root = "." }])
--   local codes = isolate.spawn({ { argv = { "luajit", "s.lua" }, env = {...}, log = path }, ... }, on_line)
--   local ok, out, code = isolate.command({ "squeue", "-h" } | "shell line"[, { env, timeout_s }])
--   local w = isolate.pipe_writer(argv | line[, { env }])     -- its stdin: w:write(s) w:flush() w:close()
--   isolate.which("gnuplot") -> path | nil; isolate.cores() -> n; isolate.sleep(seconds)
local ffi = require("ffi")
local util = require("cuasync.util")
local fs = require("cuasync.fs")

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

-- A shell line from an argv list (each word quoted) or a line given as is.
local function command_line(where, cmd)
  if type(cmd) == "string" then return cmd end
  util.list(where, "argv", cmd)
  if #cmd == 0 then util.fail(where, "argv must name a command (got an empty list)") end
  local words = {}
  for i, a in ipairs(cmd) do
    if type(a) ~= "string" and type(a) ~= "number" then
      util.fail(where, ("argv[%d] must be a string or a number (got %s)"):format(i, type(a)))
    end
    words[i] = shell_quote(a)
  end
  return table.concat(words, " ")
end

local function options(where, o, known)
  if o == nil then return {} end
  util.kind(where, "opts", o, "table")
  util.known_fields(where, o, known, "opts")
  if o.env ~= nil then util.kind(where, "opts.env", o.env, "table") end
  if o.timeout_s ~= nil then util.count(where, "opts.timeout_s", o.timeout_s) end
  return o
end

-- The line run under `env` and, with timeout_s, timeout(1) (TERM, then KILL 5 s later).
local function wrapped(line, o)
  local limit = o.timeout_s and ("timeout -k 5 %d "):format(o.timeout_s) or ""
  if o.env or limit ~= "" then line = ("env %s %ssh -c %s"):format(env_prefix(o.env), limit, shell_quote(line)) end
  return line
end

-- The exit code rides on a last line of its own, so output not ending in a newline is kept whole.
local MARK = "\ncuasync-isolate-rc="

-- Run a command and wait: ok (exit code 0), its stdout and stderr together, its exit code (128+n
-- when killed by signal n; 124 when timeout_s ran out).
function M.command(cmd, opts)
  local o = options("isolate.command", opts, { env = true, timeout_s = true })
  local line = wrapped(command_line("isolate.command", cmd), o)
  local p = io.popen(("(\n:\n%s\n) 2>&1 </dev/null; printf '%s%%d\\n' $?"):format(line, (MARK:gsub("\n", "\\n"))))
  local out = p:read("*a")
  p:close()
  local at, code = out:match("()" .. MARK:gsub("%p", "%%%0") .. "(%d+)\n$")
  if not at then return false, out, nil end
  code = tonumber(code)
  return code == 0, out:sub(1, at - 1), code
end

-- A process whose stdin this one writes (stdout and stderr as the caller's line sends them): the
-- handle of io.popen(line, "w"), or nil and why. A write to one that died fails (EPIPE) where
-- SIGPIPE is ignored; close() waits for it.
function M.pipe_writer(cmd, opts)
  local o = options("isolate.pipe_writer", opts, { env = true })
  local line = wrapped(command_line("isolate.pipe_writer", cmd), o)
  local p, err = io.popen(line, "w")
  if not p then return nil, ("cannot start %s: %s"):format(line, tostring(err)) end
  return p
end

-- The path of a command on PATH, or nil.
function M.which(name)
  util.cstring("isolate.which", "name", name)
  local ok, out = M.command("command -v " .. shell_quote(name))
  if not ok then return nil end
  out = out:gsub("%s+$", "")
  return out ~= "" and out or nil
end

-- The cores this process may run on (nproc: the affinity mask, OMP_NUM_THREADS), at least 1;
-- asked once per process. 4 where nproc is missing.
local cores
function M.cores()
  if not cores then
    local ok, out = M.command("nproc")
    cores = ok and tonumber(out:match("^%s*(%d+)")) or 4
    cores = math.max(1, cores)
  end
  return cores
end

-- Wait `seconds` without a process (poll(2) with no descriptors); a signal ends it early.
pcall(ffi.cdef, "int poll(void *fds, unsigned long nfds, int timeout);")
function M.sleep(seconds)
  if type(seconds) ~= "number" or not (seconds >= 0 and seconds <= 86400) then
    util.fail("isolate.sleep", ("seconds must be a number in [0, 86400] (got %s)"):format(util.describe(seconds)))
  end
  ffi.C.poll(nil, 0, math.floor(seconds * 1000 + 0.5))
end

function M.run(code, opts)
  opts = opts or {}
  local root = opts.root or "."
  local file = os.tmpname()
  local ok, why = fs.write(file, ("package.path = %q .. package.path\n"):format(root .. "/lua/?.lua;" .. root .. "/lua/?/init.lua;")
    .. ("package.cpath = %q .. package.cpath\n"):format(root .. "/build/?.so;") .. code)
  if not ok then
    fs.remove(file)
    util.fail("isolate.run", why)
  end
  local limit = opts.timeout_s and ("timeout -k 5 %d "):format(opts.timeout_s) or ""
  local p = io.popen(("env %s %sluajit %s 2>&1; echo \"exit=$?\""):format(env_prefix(opts.env), limit, file))
  local out = p:read("*a")
  p:close()
  fs.remove(file)
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

return M
