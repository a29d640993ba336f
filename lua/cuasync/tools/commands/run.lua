-- cuasync run SCRIPT.lua [args...]: a Lua script with the cuasync modules and library on its
-- paths; what follows the script is its own (arg[1], ...; an example reads them with cli.script).
local cli = require("cuasync.tools.cli")

local M = {
  name = "run",
  summary = "run a Lua script with cuasync on its path",
  usage = { "SCRIPT.lua [args...]" },
  about = "  runs SCRIPT.lua with the cuasync modules and library on its path; arg holds the args\n"
       .. "  (an example's options: cuasync run examples/NAME.lua --help)",
  rest = true,   -- everything after the script is the script's
}

function M.run(_, args)
  if #args == 0 then cli.usage_error(M, "give a script") end
  local script = args[1]
  local chunk, err = loadfile(script)
  if not chunk then cli.fail(err) end
  local new = { [0] = script }
  for i = 2, #args do new[i - 1] = args[i] end
  _G.arg = new
  local ok, e = xpcall(function() return chunk(unpack(new)) end, debug.traceback)
  if not ok then cli.fail(e) end
end

return M
