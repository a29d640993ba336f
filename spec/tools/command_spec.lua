-- The command's usage errors: exit 2, always, naming the option (an error in the run is 1); and
-- no NUL byte in what a compile says (NVRTC counts its terminating NUL in a text's size). The
-- usage and the parser come from one spec per command (tools/cli.lua); the examples run on their
-- own and through `cuasync sweep`, their own options parsed beside the command's.
local cuasync = require("cuasync")
local cli = require("cuasync.tools.cli")
local H = require("helper")
local NOLIB = H.missing("libcuda.so.1")   -- a driver that is not there

local sh = H.sh
local NOGPU = "CUASYNC_CUDA_LIB=" .. NOLIB .. " "
local COMMANDS = { "info", "compile", "sweep", "run" }
-- every example that is a sweep (the command runs it), and the others (run on their own)
local SWEEPS = { "pipeline_tma", "gemm_sweep", "gemm_ablation", "cp_async_sweep", "sweep_command", "tma_copy", "tile_copy",
                 "tile_transpose", "cluster_histogram" }
local OTHERS = { "pipeline_model", "swizzle_view", "bench_cancel", "bench_compile", "bench_graph", "bench_graph_loop", "bench_launch",
                 "bench_patterns", "bench_watchdog", "bench_warmup" }

describe("cuasync command", function()
  it("exits 2 on every usage error of sweep, naming the option", function()
    local dir = H.tmpdir()
    local f = assert(io.open(dir .. "/s.lua", "w"))
    f:write('return { name = "cmd", host = true, rounds = 1, reps = 1, params = { k = { 1, 2 } }, build = function() return { run = function() end } end }\n')
    f:close()
    local base = "luajit bin/cuasync sweep " .. dir .. "/s.lua --quiet "
    for _, case in ipairs({
      { "--shard 3/2", "--shard 3/2 is not I/N with 1 <= I <= N" },
      { "--shard 0/2", "--shard 0/2 is not I/N with 1 <= I <= N" },
      { "--shard x", "--shard x is not I/N with 1 <= I <= N" },
      { "--jobs 0", "--jobs 0 must be an integer in 1..256" },
      { "--jobs x", "--jobs x is not an integer" },
      { "--param 'k=,'", "--param k=, has an empty value" },
      { "--param k=1,,2", "--param k=1,,2 has an empty value" },
      { "--gpus -1", "--gpus -1 is not all or a comma list of device ordinals" },
      { "--gpus 0,x", "--gpus 0,x is not all or a comma list of device ordinals" },
    }) do
      local out, rc = sh(base .. case[1])
      assert.equal(2, rc, case[1] .. ": " .. out)
      assert.truthy(out:find(case[2], 1, true), case[1] .. ": " .. out)
    end
    local out, rc = sh(base .. "--param k=3,4 --shard 2/2")
    assert.equal(0, rc, out)
    assert.truthy(out:find("1 points: 1 measured", 1, true), out)
  end)

  it("defect 8: the newer options' usage errors exit 2 too, naming the option with the API's rule", function()
    local dir = H.tmpdir()
    H.write(dir .. "/s.lua", 'return { name = "cmd8", host = true, rounds = 1, reps = 1, params = { k = { 1, 2 } }, build = function() return { run = function() end } end }\n')
    local base = NOGPU .. "CUASYNC_CACHE_DIR=" .. H.tmpdir() .. " luajit bin/cuasync sweep " .. dir .. "/s.lua --quiet "
    local S = "--slurm --dry-run --slurm-dir " .. dir .. "/slurm "
    for _, case in ipairs({
      { S .. "--shards 100001", "--shards 100001 must be an integer in 1..100000" },
      { S .. "--poll-seconds 0", "--poll-seconds 0 must be a number of seconds in (0, 60]" },
      { S .. "--time 1h", '--time 1h must be a Slurm time limit: "minutes", "MM:SS", "HH:MM:SS" or "D-HH[:MM[:SS]]"' },
      { S .. "--partition 'a b'", "--partition 'a b' must hold no spaces, quotes or backslashes: it goes on #SBATCH lines" },
      { S .. "--gpus-per-task 65", "--gpus-per-task 65 must be an integer in 0..64" },
      { S .. "--sbatch-arg exclusive", "--sbatch-arg exclusive must be one sbatch option starting with '-'" },
      { "--slurm --dry-run --slurm-dir 'a b'", "--slurm-dir 'a b' must hold no spaces, quotes or backslashes" },
      { "--strategy bogus", "--strategy bogus must be one of exhaustive, random, local, replay" },
      { "--seed 2147483649", "--seed 2147483649 must be an integer in 0..2147483648" },
      { "--budget-points 0", "--budget-points 0 must be a positive integer" },
      { "--budget-seconds -1", "--budget-seconds -1 must be a positive number" },
      { "--jobs 257", "--jobs 257 must be an integer in 1..256" },
      { "--gpus 64", "--gpus 64 must be all or a list of GPU ordinals in 0..63" },
      { "--param nope=1", '--param nope=1: unknown param "nope" (params: k)' },
      { "--plot p.jpg", "--plot p.jpg: path must end in .png or .svg" },
      { "--plot p.png --x nope", '--x nope is not a parameter of the sweep (k)' },
      { "--plot p.png --series nope", '--series nope is not a parameter of the sweep (k)' },
      { "--warmup-ms -5", "--warmup-ms -5: warmup_ms must be an integer in 0..60000 (got -5)" },
      { "--columns spread,clock", "--columns spread,clock: clock is not a column (columns: " },
    }) do
      local out, rc = sh(base .. case[1])
      assert.equal(2, rc, case[1] .. ": " .. out)
      assert.truthy(out:find("cuasync: " .. case[2], 1, true), case[1] .. ": " .. out)
      assert.truthy(out:find("usage: cuasync sweep", 1, true), case[1] .. ": " .. out)
    end
    local out, rc = sh(base .. S)   -- and the good ones still run: nothing made by a dry run
    assert.equal(0, rc, out)
    assert.truthy(out:find("dry run: nothing submitted (2 of 2 shards would be)", 1, true), out)
  end)

  it("says nothing with a NUL byte: a clean compile's log, a failed compile's message, cuasync compile's output", function()
    local m = cuasync.program{ source = 'extern "C" __global__ void k() {}', arch = "sm_90a" }:compile()
    assert.equal("", m:log())
    assert.is_nil(m:ptx():find("%z"))
    local ok, err = pcall(function() cuasync.program{ source = 'extern "C" __global__ void k() { int x = ; }', arch = "sm_90a" }:compile() end)
    assert.is_false(ok)
    assert.is_nil(tostring(err):find("%z"))
    local dir = H.tmpdir()
    local f = assert(io.open(dir .. "/bad.cu", "w"))
    f:write('extern "C" __global__ void k() {\n  int x = ;\n}\n')
    f:close()
    local out, rc = sh("luajit bin/cuasync compile " .. dir .. "/bad.cu --arch sm_90a")
    assert.equal(1, rc, out)
    assert.is_nil(out:find("%z"), out)
    out, rc = sh("luajit bin/cuasync compile copy_bulk.cu --arch sm_90a -D STAGES=3 --ptx " .. dir .. "/k.ptx")
    assert.equal(0, rc, out)
    assert.is_nil(assert(io.open(dir .. "/k.ptx")):read("*a"):find("%z"))
  end)

  it("prints each command's --help from its spec, every option in it", function()
    for _, name in ipairs(COMMANDS) do
      local spec = require("cuasync.tools.commands." .. name)
      local out, rc = sh("luajit bin/cuasync " .. name .. " --help")
      assert.equal(0, rc, name .. ": " .. out)
      assert.equal(cli.usage(spec) .. "\n", out)
      for _, e in ipairs(spec.options or {}) do
        if type(e) == "table" then assert.truthy(out:find("\n  " .. e[1], 1, true), name .. ": " .. e[1] .. " not in\n" .. out) end
      end
    end
    local out = sh("luajit bin/cuasync --help")
    for _, name in ipairs(COMMANDS) do assert.truthy(out:find("\n  " .. name .. " ", 1, true), out) end
  end)

  it("exits 2 on an unknown option of any command, naming it", function()
    for _, c in ipairs({ "info --nope", "compile --nope copy_bulk.cu", "compile copy_bulk.cu --nope=1", "sweep --nope s.lua",
                         "run --nope s.lua", "sweep --merge a.json --nope" }) do
      local out, rc = sh("luajit bin/cuasync " .. c)
      assert.equal(2, rc, c .. ": " .. out)
      assert.truthy(out:find("cuasync: unknown option --nope\n", 1, true), c .. ": " .. out)
    end
    local out, rc = sh("luajit bin/cuasync info --quiet")   -- another command's option is unknown here
    assert.equal(2, rc, out)
    assert.truthy(out:find("cuasync: unknown option --quiet", 1, true), out)
    out, rc = sh("luajit bin/cuasync compile copy_bulk.cu --arch")
    assert.equal(2, rc, out)
    assert.truthy(out:find("cuasync: --arch needs a value", 1, true), out)
  end)

  it("parses by the spec: types, defaults, repeated options, -DX, --name=value, typed positionals", function()
    local spec = { name = "t", args = { { "ROWS", "rows", default = 16 } }, options = {
      { "--n N", "a number", default = 4 }, { "--list LIST", "a list", default = { "a", "b" } }, { "--ints LIST", "", default = { 1 } },
      { "--flag", "a flag" }, { "-D NAME=VALUE", "", many = true }, { "--dry-run", "", needs = "flag" },
      { "--mode M", "", choices = { "x", "y" } } } }
    local o, pos = cli.parse(spec, {})
    assert.same({ n = 4, list = { "a", "b" }, ints = { 1 }, d = {}, rows = 16 }, o)
    assert.same({}, pos)
    o, pos = cli.parse(spec, { "--n=5", "-DX=1", "-D", "Y", "--list", "c,7", "--ints", "2,3", "--flag", "--dry-run", "--mode", "y", "32" })
    assert.same({ n = 5, list = { "c", 7 }, ints = { 2, 3 }, d = { "X=1", "Y" }, flag = true, dry_run = true, mode = "y", rows = 32 }, o)
    assert.same({ "32" }, pos)
    assert.equal("usage: cuasync t [options] [ROWS]", cli.usage(spec, true))
  end)

  it("runs an example's sweep: its own options beside the command's, compiled with no GPU, launches skipped", function()
    local dir = H.tmpdir()
    local env = NOGPU .. "CUASYNC_CACHE_DIR=" .. H.tmpdir() .. " "
    -- --rows and --warps are the example's, --param and --out the command's
    local out, rc = sh(env .. "luajit bin/cuasync sweep examples/pipeline_tma.lua --param stages=2,4 --rows 32 --warps 2 "
      .. "--param inflight=0 --jobs 2 --out " .. dir .. "/new")
    assert.equal(0, rc, out)
    assert.truthy(out:find("2 points: 0 measured, 0 pruned, 0 failed, 2 skipped", 1, true), out)
    local _, n = out:gsub("launches skipped", "")
    assert.equal(1, n, out)
    assert.truthy(out:find("wrote T4 " .. dir .. "/new/pipeline_tma.t4.json", 1, true), out)
    assert.truthy(out:find("\ndone: 2 variants compiled; nothing launched, so no knee and no plot %(no CUDA driver[^\n]*%)\n$"), out)
    -- on its own, the same example with its own options only
    out, rc = sh(env .. "luajit examples/pipeline_tma.lua --stages 2 --rows 32 --warps 2 --inflight 0 --out " .. dir .. "/alone")
    assert.equal(0, rc, out)
    assert.truthy(out:find("1 points: 0 measured", 1, true) and out:find("wrote CSV " .. dir .. "/alone/pipeline_tma.csv", 1, true), out)
    -- an example's option that is wrong, unknown, or read on its own only: usage errors naming it
    for _, c in ipairs({ { "--stages 2,x", "cuasync: --stages 2,x is not a comma list of integers" },
                         { "--nope", "cuasync: unknown option --nope" },
                         { "--slurm-gpus 2", "cuasync: unknown option --slurm-gpus" } }) do
      out, rc = sh(env .. "luajit bin/cuasync sweep examples/pipeline_tma.lua " .. c[1])
      assert.equal(2, rc, c[1] .. ": " .. out)
      assert.truthy(out:find(c[2], 1, true), c[1] .. ": " .. out)
    end
    out, rc = sh(env .. "luajit examples/pipeline_tma.lua --param stages=2")
    assert.equal(2, rc, out)
    assert.truthy(out:find("pipeline_tma.lua: unknown option --param", 1, true), out)
  end)

  it("lists each example's options, on its own and, for a sweep, through the command beside the command's", function()
    for _, name in ipairs(SWEEPS) do
      local path = "examples/" .. name .. ".lua"
      local out, rc = sh("luajit bin/cuasync sweep " .. path .. " --help")
      assert.equal(0, rc, name .. ": " .. out)
      assert.truthy(out:find("usage: cuasync sweep SCRIPT.lua [options]", 1, true) and out:find("--shard I/N", 1, true), out)
      if name ~= "sweep_command" then assert.truthy(out:find("\noptions of " .. path .. ":\n", 1, true), out) end
    end
    for _, list in ipairs({ SWEEPS, OTHERS }) do
      for _, name in ipairs(list) do
        if name ~= "sweep_command" then   -- the bare script contract: it declares no option
          local out, rc = sh("luajit examples/" .. name .. ".lua --help")
          assert.equal(0, rc, name .. ": " .. out)
          assert.truthy(out:find("usage: luajit examples/" .. name .. ".lua", 1, true), out)
        end
      end
    end
    local out, rc = sh("luajit bin/cuasync run examples/pipeline_model.lua --help")
    assert.equal(0, rc, out)
    assert.truthy(out:find("--mutation NAME", 1, true), out)
  end)
end)
