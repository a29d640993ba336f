-- cuasync compile FILE.cu: compile through the cache and say, per kernel, what ptxas reported and
-- which async instructions the PTX holds (no GPU needed).
local cli = require("cuasync.tools.cli")
local errors = require("cuasync.errors")

-- -D NAME=VALUE (a bare NAME is 1) -> { name, value }
local function define(v)
  local k, x = v:match("^([%a_][%w_]*)=(.*)$")
  if not k then k, x = v:match("^([%a_][%w_]*)$"), "1" end
  if not k then return nil, "is not NAME=VALUE" end
  return { k, cli.value(x) }
end

local M = {
  name = "compile",
  summary = "compile with the cache; registers, shared memory, spills, async instructions",
  usage = { "FILE.cu [options]" },
  about = [[
  compiles FILE.cu (a path, or a name under kernels-src) through the cache and prints, per kernel,
  registers, static shared memory, stack and spill bytes (from ptxas' report, so no GPU is needed),
  and which async instructions the PTX holds. A compile error prints the numbered source lines.]],
  options = {
    { "-D NAME=VALUE", "a define (a bare NAME is 1)", many = true, type = define },
    { "--arch ARCH", "the target: sm_90a, compute_90a, ... (default: the device's, sm_90a without one)" },
    { "--plan PLAN.lua", "PLAN.lua returns a cuasync.pipeline: FILE.cu is compiled as that plan's kernel (its generated "
      .. "header <cuasync/pipelines/NAME.cuh> and defines), and the plan's explain is printed" },
    { "--watchdog", "compile every wait with the hang watchdog" },
    { "--ptx FILE", "write the PTX to FILE" },
    { "--cubin FILE", "write the cubin to FILE" },
  },
}

local ASYNC = {
  { "cp.async (4/8/16-byte)", "cp%.async%.c[ag]%." },
  { "cp.async.bulk", "cp%.async%.bulk%.[sg]" },
  { "cp.async.bulk.tensor.1d", "cp%.async%.bulk%.tensor%.1d" }, { "cp.async.bulk.tensor.2d", "cp%.async%.bulk%.tensor%.2d" },
  { "cp.async.bulk.tensor.3d", "cp%.async%.bulk%.tensor%.3d" }, { "cp.async.bulk.tensor.4d", "cp%.async%.bulk%.tensor%.4d" },
  { "cp.async.bulk.tensor.5d", "cp%.async%.bulk%.tensor%.5d" },
  { "mbarrier.try_wait", "mbarrier%.try_wait" }, { "multicast", "multicast::cluster" },
  { "wgmma", "wgmma%.mma_async" },
}

-- A file the command writes, or an error naming it.
local function write(path, data)
  local ok, why = cli.write_file(path, data)
  if not ok then error(("cuasync compile: cannot write %s (%s)"):format(path, why), 0) end
  print("  wrote " .. path)
end

local function compile(o, file)
  -- lazy: --help and usage errors need no native library
  local program = require("cuasync.program")
  local cache = require("cuasync.cache")
  local defines = {}
  for _, d in ipairs(o.d) do defines[d[1]] = d[2] end
  local spec = { file = file, defines = defines, arch = o.arch, watchdog = o.watchdog or nil }
  local prog
  if o.plan then
    local chunk, why = loadfile(o.plan)
    if not chunk then error(("cuasync compile: --plan %s cannot be read: %s"):format(o.plan, why), 0) end
    local P = chunk()
    if getmetatable(P) ~= require("cuasync.pipeline").Pipeline then
      error(("cuasync compile: --plan %s must return a cuasync.pipeline{...} (got %s)"):format(o.plan, type(P)), 0)
    end
    print(P:explain())
    prog = P:program(spec)
  else
    prog = program.public(spec)
  end
  local mod = prog:compile()
  local ptx = mod:ptx() or ""
  print(("%s for %s: PTX %d bytes, cubin %d bytes (%s)"):format(prog.name, mod.arch, #ptx, mod:cubin() and #mod:cubin() or 0,
    cache.stats.nvrtc > 0 and "compiled" or "from the cache"))
  if mod:log() ~= "" then print(mod:log()) end
  local res, why = mod:resources()
  local names = {}
  for k in pairs(res) do names[#names + 1] = k end
  table.sort(names)
  for _, k in ipairs(names) do
    local r = res[k]
    print(("  kernel %s: %d registers, %d bytes static shared memory, %d bytes stack, %d bytes spill stores, %d bytes spill loads"):format(
      k, r.registers, r.static_smem, r.stack, r.spill_stores, r.spill_loads))
  end
  if why then print("  resources: " .. why) end
  local found = {}
  for _, a in ipairs(ASYNC) do
    local n = select(2, ptx:gsub(a[2], ""))
    if n > 0 then found[#found + 1] = ("%s x%d"):format(a[1], n) end
  end
  print("  async instructions: " .. (#found > 0 and table.concat(found, ", ") or "none"))
  print("  dynamic shared memory: set at launch (cuasync checks it against the device's opt-in)")
  if o.ptx then write(o.ptx, ptx) end
  if o.cubin then write(o.cubin, mod:cubin() or "") end
end

function M.run(o, args)
  if #args ~= 1 then cli.usage_error(M, "give one .cu file") end
  local ok, err = pcall(compile, o, args[1])
  if not ok and errors.kind(err) == "compile" and err.log:find('cannot open source file "cuasync/pipelines/', 1, true) then
    err = tostring(err) .. "\n(a pipeline plan's kernel: give the plan with --plan PLAN.lua, a file that returns the cuasync.pipeline{...})"
  end
  if not ok then cli.fail(err) end
end

return M
