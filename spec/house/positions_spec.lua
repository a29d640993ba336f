-- Every public entry raises at the user's line: one bad call of each, the raw message (luassert
-- strips positions, so pcall and compare) must start with this file and the line of the call.
local cuasync = require("cuasync")
local H = require("helper")
local gpu_it = H.gpu_it(it, pending)

local FILE = "spec/house/positions_spec.lua"
local NULL = require("ffi").cast("void *", 0)

-- Each case: a name and a function returning (line of the call, pcall's results) from one line.
local function L() return debug.getinfo(2, "l").currentline end

local CPU = {
  { "program", function() return L(), pcall(cuasync.program, { source = 1 }) end },
  { "program{file}", function() return L(), pcall(cuasync.program, { file = "no/such.cu" }) end },
  { "program{defines}", function() return L(), pcall(cuasync.program, { source = "", defines = { X = 2 ^ 63 } }) end },
  { "program{options}", function() return L(), pcall(cuasync.program, { source = "", options = { "-O3", nil, "-x" } }) end },
  { "program:compile", function() local p = cuasync.program{ source = "nope", name = "p.cu", arch = "sm_90a" }; return L(), pcall(p.compile, p) end },
  { "tensormap", function() return L(), pcall(cuasync.tensormap, { ptr = 4096, dtype = "f32", dims = { 0 }, box = { 1 } }) end },
  { "tensormap{ptr}", function() return L(), pcall(cuasync.tensormap, { ptr = 1e300, dtype = "f32", dims = { 4 }, box = { 4 } }) end },
  { "swizzle.layout", function() return L(), pcall(cuasync.swizzle.layout, "96B", { 32 }, 4) end },
  { "swizzle.show", function() return L(), pcall(cuasync.swizzle.show, "128B", { 32 }, 3) end },
  { "layout:offset", function() local l = cuasync.swizzle.layout("128B", { 32, 8 }, 4); return L(), pcall(l.offset, l, 1) end },
  { "layout:bank_conflicts", function() local l = cuasync.swizzle.layout("128B", { 32, 8 }, 4); return L(), pcall(l.bank_conflicts, l, "x") end },
  { "check_launch", function() return L(), pcall(cuasync.check_launch, { grid = 1e300, block = 1 }) end },
  { "signature", function() return L(), pcall(cuasync.signature, "ptr, u33") end },
  { "median", function() return L(), pcall(cuasync.median, {}) end },
  { "bench", function() return L(), pcall(cuasync.bench, 5) end },
  { "bench_rounds", function() return L(), pcall(cuasync.bench_rounds, { {} }) end },
  { "copy.bulk_kernel", function() return L(), pcall(cuasync.copy.bulk_kernel, 5) end },
  { "copy.check_bulk", function() return L(), pcall(cuasync.copy.check_bulk, 16, {}, 0) end },
  { "patterns.kernel", function() return L(), pcall(cuasync.patterns.kernel, "nope") end },
  { "pattern:verify", function() local p = cuasync.patterns.kernel("stage_sync"); local a = require("ffi").new("uint32_t[4]"); return L(), pcall(p.verify, p, a, a, -2 ^ 53) end },
  { "device", function() return L(), pcall(cuasync.device, -1) end },
  { "alloc", function() return L(), pcall(cuasync.alloc, -1) end },
  { "host_alloc", function() return L(), pcall(cuasync.host_alloc, 0.5) end },
  { "stream", function() return L(), pcall(cuasync.stream, { blocking = true }) end },
  { "synchronize", function() return L(), pcall(cuasync.synchronize, 5) end },
  { "driver_symbol", function() return L(), pcall(cuasync.driver_symbol, nil) end },
  { "model.ring.plan", function() return L(), pcall(cuasync.model.ring.plan, { stages = 0, stage_bytes = 16 }) end },
  -- issue 41: a NULL where a value may be left out, a kernel attribute of the wrong type, pdl
  { "pipeline:program{watchdog = NULL}", function() local P = cuasync.pipeline{ name = "pos", stages = 2, stage_bytes = 1024, producer = { warps = 1 }, consumer = { warps = 1 } }; return L(), pcall(P.program, P, { source = "", watchdog = NULL }) end },
  { "graph(fn, NULL)", function() return L(), pcall(cuasync.graph, function() end, NULL) end },
  { "check_launch(attrs)", function() return L(), pcall(cuasync.check_launch, { grid = 1, block = 32 }, nil, { max_threads = "x" }, "k") end },
  { "check_launch{pdl}", function() return L(), pcall(cuasync.check_launch, { grid = 1, block = 32, pdl = true }) end },
}

local function expect_here(line, ok, err)
  assert.is_false(ok, "expected an error")
  local msg = tostring(err)
  local want = ("%s:%d: cuasync."):format(FILE, line)
  assert.equal(want, msg:sub(1, #want), msg)
end

describe("errors point at the caller's line", function()
  for _, c in ipairs(CPU) do
    it(c[1], function() expect_here(c[2]()) end)
  end

  gpu_it("buffers, kernels, launches and module globals #gpu", function()
    local b = cuasync.alloc(64)
    local m = cuasync.program{ source = 'extern "C" __global__ void k(int *p) {} __device__ int g;', name = "pos.cu" }:compile()
    local k = m:kernel("k", "ptr")
    for _, c in ipairs({
      { function() return L(), pcall(b.upload, b, "xyz", 5) end },
      { function() return L(), pcall(b.download, b, "nosuchtype") end },
      { function() return L(), pcall(b.fill, b, 300) end },
      { function() return L(), pcall(m.kernel, m, "k", "ptr, u33") end },
      { function() return L(), pcall(m.global, m, "nope") end },
      { function() return L(), pcall(k.launch, k, { grid = 0, block = 32 }, b) end },
      { function() return L(), pcall(k.launch, k, { grid = 1, block = 32 }, "not a pointer") end },
      { function() return L(), pcall(k.prepare, k, { grid = 1, block = 2048 }) end },
      { function() return L(), pcall(k.occupancy, k, 0) end },
      { function() return L(), pcall(cuasync.event().elapsed, cuasync.event(), 5) end },
    }) do expect_here(c[1]()) end
    -- a driver failure is an object: its message has no position, its where field has this line
    local line, ok, err = L(), pcall(cuasync.alloc, 2 ^ 50)
    assert.is_false(ok)
    assert.equal("CUDA_ERROR_OUT_OF_MEMORY", err.code)
    assert.is_false(err.sticky)
    assert.equal(FILE .. ":" .. line, err.where)
    b:close()
  end)
end)
