-- Run a LuaJIT snippet in a fresh process (a sticky CUDA error, a hang or a crash there cannot
-- touch the caller), with extra environment and an optional time limit. A consumer of the core:
-- nothing in lua/cuasync/ requires it.
--   local ok, out, code = isolate.run(code[, { env = { K = "v" }, timeout_s = 60, root = "." }])
local M = {}

local function shell_quote(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end
M.shell_quote = shell_quote

function M.run(code, opts)
  opts = opts or {}
  local root = opts.root or "."
  local prefix = {}
  for k, v in pairs(opts.env or {}) do prefix[#prefix + 1] = ("%s=%s"):format(k, shell_quote(v)) end
  local file = os.tmpname()
  local f = assert(io.open(file, "w"))
  f:write(("package.path = %q .. package.path\n"):format(root .. "/lua/?.lua;" .. root .. "/lua/?/init.lua;"),
          ("package.cpath = %q .. package.cpath\n"):format(root .. "/build/?.so;"), code)
  f:close()
  local limit = opts.timeout_s and ("timeout -k 5 %d "):format(opts.timeout_s) or ""
  local p = io.popen(("env %s %sluajit %s 2>&1; echo \"exit=$?\""):format(table.concat(prefix, " "), limit, file))
  local out = p:read("*a")
  p:close()
  os.remove(file)
  local rc = tonumber(out:match("exit=(%d+)%s*$"))
  return rc == 0, (out:gsub("exit=%d+%s*$", "")), rc
end

return M
