-- The commands of bin/cuasync, one spec each (tools/commands/<name>.lua, parsed by tools/cli.lua),
-- and the dispatcher: `cuasync <command> [options]`, `cuasync --help`. The commands load what they
-- need when they run, so `cuasync info` works where the native library does not.
local cli = require("cuasync.tools.cli")

local M = {}

M.NAMES = { "info", "compile", "sweep", "run" }   -- in --help's order
M.COMMANDS = {
  info = require("cuasync.tools.commands.info"),
  compile = require("cuasync.tools.commands.compile"),
  sweep = require("cuasync.tools.commands.sweep"),
  run = require("cuasync.tools.commands.run"),
}

function M.usage()
  local lines = { "usage: cuasync <command> [options]" }
  for _, n in ipairs(M.NAMES) do
    local c = M.COMMANDS[n]
    lines[#lines + 1] = cli.item(n .. " " .. c.usage[1]:gsub("%[options%]", "[opts]"), c.summary)
  end
  lines[#lines + 1] = cli.item("<command> --help", "the options of a command")
  return table.concat(lines, "\n")
end

-- bin/cuasync's work: argv[0] is the launcher (a sweep's workers run it again with the same argv).
function M.main(argv)
  cli.program, cli.argv = argv[0], argv
  local name = argv[1]
  local spec = type(name) == "string" and M.COMMANDS[name]
  if not spec then
    if name == "--help" or name == "-h" then io.stdout:write(M.usage(), "\n") os.exit(0) end
    io.stderr:write("cuasync: ", name and ("unknown command " .. name) or "give a command", "\n", M.usage(), "\n")
    os.exit(2)
  end
  local rest = {}
  for i = 2, #argv do rest[#rest + 1] = argv[i] end
  if spec.main then return spec.main(rest) end
  return spec.run(cli.parse(spec, rest))
end

return M
