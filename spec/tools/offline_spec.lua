-- What a user does without a GPU (the manual issue's offline paths): a plan checked against an
-- architecture's limits, a program's registers and spills from ptxas' report, a plan kernel
-- compiled by the command, a sweep script that returns its sweep, a missing driver named by the
-- call, `cuasync info` with every number labelled, and make run's sweep (an example run by the
-- command) ending cleanly.
local cuasync = require("cuasync")
local H = require("helper")
local NOLIB = H.missing("libcuda.so.1")   -- a driver that is not there

local NOGPU = "CUASYNC_CUDA_LIB=" .. NOLIB .. " "
-- 48 live values: under -maxrregcount=24 ptxas spills them, under 128 it does not
local SPILL = [[
extern "C" __global__ void k(float *o, int n) {
  float a[48];
#pragma unroll
  for (int i = 0; i < 48; i++) a[i] = o[i * n + threadIdx.x];
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < 8; j++)
#pragma unroll
  for (int i = 0; i < 48; i++) s += a[i] * a[(i + j) % 48];
  o[threadIdx.x] = s;
}]]


describe("offline", function()
  it("checks a plan against sm_90, sm_90a or a limits table, without a driver", function()
    local P = cuasync.pipeline{ stages = 4, stage_bytes = 32768, producer = { warps = 1 }, consumer = { warps = 2 } }
    assert.equal(P, P:check("sm_90"))
    assert.equal(P, P:check("sm_90a"))
    local small = {}
    for k, v in pairs(cuasync.limits.sm_90) do small[k] = v end
    small.smem_optin = 65536
    assert.error_matches(function() P:check(small) end, "needs %d+ bytes of dynamic shared memory .* so at most 1 stages fit")
    assert.error_matches(function() P:check("sm_80") end, 'check\'s argument must be a cuasync device, "sm_90", "sm_90a" or a limits table')
  end)

  it("reports each kernel's registers, shared memory, stack and spills from ptxas, with no second compile", function()
    local p = cuasync.program{ file = "copy_bulk.cu", arch = "sm_90a", defines = { STAGES = 3 } }
    local res, why = p:resources()
    assert.is_nil(why)
    local r = res.copy_bulk
    assert.truthy(r, "no copy_bulk in the report")
    assert.truthy(r.registers > 0 and r.registers <= 255, tostring(r.registers))
    assert.truthy(r.static_smem >= 0 and r.spill_stores == 0 and r.spill_loads == 0 and r.stack >= 0)
    local before = cuasync.cache.stats.nvrtc
    local mod = p:compile()
    assert.same(res, (mod:resources()))
    assert.equal(before, cuasync.cache.stats.nvrtc)
    assert.equal("", mod:log())   -- the report is not left in the log
    -- a kernel that spills: 48 live values under a 24-register cap
    local spill = cuasync.program{ name = "spill.cu", arch = "sm_90a", options = { "-maxrregcount=24" }, source = SPILL }
    local sr = spill:resources().k
    assert.truthy(sr.registers <= 24 and sr.spill_stores > 0 and sr.spill_loads > 0, ("%d registers, %d spill stores"):format(sr.registers, sr.spill_stores))
    local ptx_only, why2 = cuasync.program{ file = "copy_bulk.cu", arch = "compute_90a" }:resources()
    assert.same({}, ptx_only)
    assert.truthy(why2:find("no cubin for compute_90a", 1, true), why2)
  end)

  it("shows registers and spills in a sweep, and prunes a spilling variant with spills = \"prune\"", function()
    local ok, out = H.luajit("local SPILL = [=[" .. SPILL .. "]=]\n" .. [[
      local cuasync = require("cuasync")
      local S = cuasync.sweep{ name = "regs", host = true, rounds = 1, reps = 1, spills = "prune", params = { regs = { 24, 128 } },
        program = function(p) return cuasync.program{ name = "spill.cu", arch = "sm_90a", options = { "-maxrregcount=" .. p.regs }, source = SPILL } end,
        build = function() return { run = function() end } end }
      S:run{ quiet = true, jobs = 1 }
      for _, r in ipairs(S.rows) do print("ROW", r.params.regs, r.kind, r.registers, r.spills, r.reason) end
      print(S:text())
    ]], { CUASYNC_CACHE_DIR = H.tmpdir(), CUASYNC_CUDA_LIB = NOLIB }, 120)
    assert.is_true(ok, out)
    assert.truthy(out:find("ROW\t24\tpruned\t%d+\t%d+\tspills %d+ bytes to local memory %(spills = \"prune\"%)"), out)
    assert.truthy(out:find("ROW\t128\tmeasured\t%d+\t0\tnil"), out)
    assert.truthy(out:find("regs  spill", 1, true), out)
    assert.has_error(function() cuasync.sweep{ name = "x", host = true, spills = "drop", params = { a = { 1 } }, build = function() end } end,
      'cuasync.sweep: spills must be "prune" (a variant that spills to local memory is pruned) or "keep" (got "drop")')
  end)

  it("compiles a plan kernel with `cuasync compile --plan`, printing the plan and the resources", function()
    local dir = H.tmpdir()
    H.write(dir .. "/plan.lua", [[
      local cuasync = require("cuasync")
      local map = cuasync.tensormap{ ptr = 2 ^ 20, bytes = 2 ^ 26, encode = false, dtype = "f32", dims = { 1024, 1024 }, box = { 64, 32 } }
      return cuasync.pipeline{ name = "tma", stages = 4, loads = { { map = map, name = "in" } }, producer = { warps = 1 }, consumer = { warps = 2 } }
    ]])
    local out, rc = H.sh(NOGPU .. "luajit bin/cuasync compile pipeline_tma.cu --plan " .. dir .. "/plan.lua -D BOX_X=64 -D BOX_Y=32")
    assert.equal(0, rc, out)
    assert.truthy(out:find("pipeline 'tma': 4 stages", 1, true), out)
    assert.truthy(out:find("kernel pipeline_tma: %d+ registers, %d+ bytes static shared memory, %d+ bytes stack, 0 bytes spill stores"), out)
    out, rc = H.sh(NOGPU .. "luajit bin/cuasync compile pipeline_tma.cu")
    assert.equal(1, rc, out)
    assert.truthy(out:find("give the plan with --plan PLAN.lua", 1, true), out)
    H.write(dir .. "/bad.lua", "return 5")
    out, rc = H.sh(NOGPU .. "luajit bin/cuasync compile pipeline_tma.cu --plan " .. dir .. "/bad.lua")
    assert.equal(1, rc, out)
    assert.truthy(out:find("--plan " .. dir .. "/bad.lua must return a cuasync.pipeline{...} (got number)", 1, true), out)
  end)

  it("takes a sweep script that returns its sweep or its table, and refuses anything else in one sentence", function()
    local dir = H.tmpdir()
    local body = 'name = "cmd", host = true, rounds = 1, reps = 1, params = { k = { 1, 2 } }, build = function() return { run = function() end } end'
    H.write(dir .. "/table.lua", "return { " .. body .. " }")
    H.write(dir .. "/object.lua", [[
      local cuasync = require("cuasync")
      local S = cuasync.sweep{ ]] .. body .. [[ }
      if not cuasync.sweep.main() then return S end
      print("RAN ALONE") S:run{ quiet = true }:print()
    ]])
    H.write(dir .. "/none.lua", "local x = 1")
    local env = NOGPU .. "CUASYNC_CACHE_DIR=" .. H.tmpdir() .. " "
    for _, f in ipairs({ "table", "object" }) do
      local out, rc = H.sh(env .. "luajit bin/cuasync sweep " .. dir .. "/" .. f .. ".lua --param k=3,4,5 --jobs 2")
      assert.equal(0, rc, out)
      assert.truthy(out:find("3 points: 3 measured", 1, true), f .. ": " .. out)
      assert.falsy(out:find("RAN ALONE", 1, true), out)
    end
    local out, rc = H.sh(env .. "luajit -e 'package.path=\"lua/?.lua;lua/?/init.lua;\"..package.path package.cpath=\"build/?.so;\"..package.cpath' " .. dir .. "/object.lua")
    assert.equal(0, rc, out)
    assert.truthy(out:find("RAN ALONE", 1, true) and out:find("2 points: 2 measured", 1, true), out)
    out, rc = H.sh(env .. "luajit bin/cuasync sweep " .. dir .. "/none.lua")
    assert.equal(1, rc, out)
    assert.truthy(out:find("none.lua must return the table cuasync.sweep takes, or the sweep cuasync.sweep{...} made (got nothing)", 1, true), out)
    -- a script finds its own files through cuasync.sweep.here(), whoever runs it
    H.write(dir .. "/here.lua", 'local d = require("cuasync.tools.sweep").here() return d')
    local okh, here = H.luajit(("io.write(dofile(%q))"):format(dir .. "/here.lua"), { CUASYNC_REQUIRE_GPU = "0" })
    assert.is_true(okh, here)
    assert.equal(dir, here)
  end)

  it("names the call when there is no driver, and labels every number of `cuasync info`", function()
    local ok, out = H.luajit([[
      local cuasync = require("cuasync")
      print(select(2, pcall(cuasync.alloc, 16)))
      print(select(2, pcall(cuasync.stream)))
      print(select(2, pcall(function() return cuasync.program{ source = 'extern "C" __global__ void k() {}' }:compile():kernel("k", "") end)))
    ]], { CUASYNC_CUDA_LIB = NOLIB, CUASYNC_REQUIRE_GPU = "0" }, 60)
    assert.is_true(ok, out)
    assert.truthy(out:find(":%d+: cuasync%.alloc: no CUDA driver: " .. H.literal(NOLIB) .. " not found"), out)
    assert.truthy(out:find(":%d+: cuasync%.stream: no CUDA driver"), out)
    assert.truthy(out:find(":%d+: cuasync%.module%.kernel: no CUDA driver"), out)
    local info = H.sh(NOGPU .. "luajit bin/cuasync info")
    assert.truthy(info:find("NVRTC:   %d+%.%d+, /[^\n]+ %(%d+ bytes, modified %d%d%d%d%-%d%d%-%d%d"), info)
  end)

  it("make run's sweep ends cleanly without a GPU: each variant compiled with its resources, one line on the launches, a last line", function()
    -- what `make run` runs (the example through the command; on its own it says the same)
    local out, rc = H.sh(NOGPU .. "CUASYNC_CACHE_DIR=" .. H.tmpdir() .. " luajit bin/cuasync sweep examples/pipeline_tma.lua --out "
      .. H.tmpdir() .. "/new/dir")
    assert.equal(0, rc, out)
    assert.truthy(out:find("compiled", 1, true) and out:find("regs  spill", 1, true), out)
    local _, n = out:gsub("launches skipped", "")
    assert.equal(1, n, out)
    assert.falsy(out:find("%.lua:%d+:"), out)   -- no error-looking line
    assert.truthy(out:find("\ndone: 48 variants compiled; nothing launched, so no knee and no plot %(no CUDA driver[^\n]*%)\n$"), out)
  end)
end)
