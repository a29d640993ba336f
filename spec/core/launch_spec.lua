-- Launches on the GPU: every parameter type arrives intact (checked in the kernel), signatures
-- are checked against the cubin, clusters really apply, prepared launches, events and bench.
local ffi = require("ffi")
local cuasync = require("cuasync")
local H = require("helper")

local PARAMS_SRC = [[
struct blob { unsigned char b[24]; };
struct __align__(64) tmap { unsigned long long q[16]; };
extern "C" __global__ void params(unsigned long long *out, int a, unsigned b, long long c,
    unsigned long long d, float e, double f, const __grid_constant__ tmap m, blob g)
{
  out[0] = (unsigned long long)(long long)a; out[1] = b; out[2] = (unsigned long long)c; out[3] = d;
  out[4] = __float_as_uint(e); out[5] = __double_as_longlong(f);
  out[6] = (unsigned long long)&m % 64;   // the tensor map parameter's alignment
  for (int i = 0; i < 16; ++i) out[7 + i] = m.q[i];
  for (int i = 0; i < 24; ++i) out[23 + i] = g.b[i];
}
]]

local CLUSTER_SRC = [[
extern "C" __global__ void where(unsigned *out)
{
  unsigned rank, n, cx, cy, cz;
  asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  asm("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
  asm("mov.u32 %0, %%cluster_nctaid.x;" : "=r"(cx));
  asm("mov.u32 %0, %%cluster_nctaid.y;" : "=r"(cy));
  asm("mov.u32 %0, %%cluster_nctaid.z;" : "=r"(cz));
  unsigned b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  if (threadIdx.x == 0) { out[5*b] = rank; out[5*b+1] = n; out[5*b+2] = cx; out[5*b+3] = cy; out[5*b+4] = cz; }
}
extern "C" __global__ void empty() {}
extern "C" __global__ void add(float *x, float v, unsigned n)
{
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += v;
}
]]

describe("kernel launch", function()
  local gpu_it = H.gpu_it(it, pending)
  local mod
  local function lib()
    mod = mod or cuasync.program{ source = CLUSTER_SRC, name = "launch_spec.cu" }:compile()
    return mod
  end

  gpu_it("delivers every parameter type intact #gpu", function()
    local k = cuasync.program{ source = PARAMS_SRC, name = "params.cu" }:compile():kernel("params",
      "ptr, i32, u32, i64, u64, f32, f64, tensormap, bytes[24]")
    local out = cuasync.alloc(47 * 8)
    out:fill(0xEE)
    local a = -(H.random_u32() % 2 ^ 31)
    local b = H.random_u32()
    local c = -ffi.cast("int64_t", H.random_u32()) * 65536 - 3
    local d = ffi.cast("uint64_t", H.random_u32()) * 2 ^ 32 + H.random_u32()
    local e, f = 1.5, math.pi * H.random_u32()
    local map = ffi.new("CUtensorMap")
    for i = 0, 15 do map.opaque[i] = ffi.cast("uint64_t", H.random_u32()) * 2 ^ 32 + H.random_u32() end
    local blob = ffi.string(H.random_bytes(24), 24)
    k:launch({ grid = 1, block = 1 }, out, a, b, c, d, e, f, map, blob)
    cuasync.synchronize()
    local r = out:download("uint64_t")
    assert.equal(ffi.cast("uint64_t", ffi.cast("int64_t", a)), r[0])
    assert.equal(ffi.cast("uint64_t", b), r[1])
    assert.equal(ffi.cast("uint64_t", c), r[2])
    assert.equal(d, r[3])
    local fe = ffi.new("float[1]", e)
    assert.equal(ffi.cast("uint32_t *", fe)[0], tonumber(r[4]))
    local ff = ffi.new("double[1]", f)
    assert.equal(ffi.cast("uint64_t *", ff)[0], r[5])
    assert.equal(0ULL, r[6])
    for i = 0, 15 do assert.equal(map.opaque[i], r[7 + i]) end
    for i = 0, 23 do assert.equal(blob:byte(i + 1), tonumber(r[23 + i])) end
    out:close()
  end)

  gpu_it("checks the signature against the kernel's real parameters #gpu", function()
    local m = cuasync.program{ source = PARAMS_SRC, name = "params.cu" }:compile()
    assert.has.error(function() m:kernel("params", "ptr, i32") end,
      "cuasync.kernel: signature \"ptr, i32\" has 2 parameters but kernel 'params' takes 9 (sizes 8, 4, 4, 8, 8, 4, 8, 128, 24 bytes)")
    assert.has.error(function() m:kernel("params", "ptr, i64, u32, i64, u64, f32, f64, tensormap, bytes[24]") end,
      "cuasync.kernel: signature \"ptr, i64, u32, i64, u64, f32, f64, tensormap, bytes[24]\": parameter 2 is i64 (8 bytes) but kernel 'params' takes 4 bytes there")
    local ok, err = pcall(function() m:kernel("nope", "") end)
    assert.is_false(ok)
    assert.truthy(err:find("cuModuleGetFunction: CUDA_ERROR_NOT_FOUND", 1, true), err)
    assert.truthy(err:find("looking up kernel 'nope' in program params.cu", 1, true), err)
  end)

  gpu_it("rejects bad arguments before the launch #gpu", function()
    local k = lib():kernel("add", "ptr, f32, u32")
    local x = cuasync.alloc(64)
    local cfg = { grid = 1, block = 16 }
    assert.has.error(function() k:launch(cfg, x, 1) end, "cuasync.launch: kernel 'add' takes 3 arguments (ptr, f32, u32), got 2")
    assert.has.error(function() k:launch(cfg, x, "1", 16) end, "cuasync.launch: argument 2 (f32) must be a number (got string)")
    assert.has.error(function() k:launch(cfg, x, 1, -1) end, "cuasync.launch: argument 3 (u32) must be an integer in 0..4294967295 (got -1)")
    assert.has.error(function() k:launch(cfg, {}, 1, 16) end, "cuasync.launch: argument 1 (ptr) must be a buffer, a device pointer or an address (got table)")
    assert.has.error(function() k:launch({ grid = 1, block = 2048 }, x, 1, 16) end, "cuasync.launch: block.x = 2048 exceeds the device's limit of 1024")
    local dev = cuasync.current_device()
    assert.has.error(function() k:launch({ grid = 1, block = 1, smem = dev.smem_optin + 1 }, x, 1, 16) end,
      ("cuasync.launch: smem = %d plus 0 bytes of static shared memory exceeds the device's %d bytes per block (smem_optin)"):format(dev.smem_optin + 1, dev.smem_optin))
    assert.has.error(function() k:launch({ grid = 3, block = 1, cluster = 2 }, x, 1, 16) end,
      "cuasync.launch: grid.x = 3 is not divisible by cluster.x = 2 (the grid must be a whole number of clusters)")
    local run = k:prepare(cfg)
    assert.has.error(function() run() end, "cuasync.launch: kernel 'add' takes 3 arguments (ptr, f32, u32) and none were given yet")
    x:close()
    assert.has.error(function() k:launch(cfg, x, 1, 16) end, "cuasync.launch: argument 1 (ptr) is a closed buffer")
  end)

  gpu_it("prepared launches pack once and relaunch #gpu", function()
    local k = lib():kernel("add", "ptr, f32, u32")
    local n = 1000
    local x = cuasync.alloc(n * 4)
    local host = ffi.new("float[?]", n)
    for i = 0, n - 1 do host[i] = H.random_u32() % 1000 end
    x:upload(host)
    local run = k:prepare({ grid = math.ceil(n / 128), block = 128 }, x, 0.5, n)
    run(); run(); run()          -- three launches with the packed arguments
    run(x, 2, n)                 -- repack
    run()
    local r = x:download("float")
    for i = 0, n - 1 do assert.equal(host[i] + 5.5, r[i]) end
    x:close()
  end)

  gpu_it("raises the dynamic shared memory limit above 48 KiB #gpu", function()
    local src = [[extern "C" __global__ void big(unsigned *out) {
      extern __shared__ unsigned s[]; unsigned n = 200 * 1024 / 4;
      for (unsigned i = threadIdx.x; i < n; i += blockDim.x) s[i] = i;
      __syncthreads(); if (threadIdx.x == 0) out[0] = s[n - 1]; }]]
    local k = cuasync.program{ source = src }:compile():kernel("big", "ptr")
    -- occupancy above 48 KiB must opt in first, even before any launch did
    assert.equal(1, k:occupancy(256, 200 * 1024))
    assert.equal(0, k:occupancy(256, k.device.smem_optin + 1))
    local out = cuasync.alloc(4)
    out:fill(0)
    k:launch({ grid = 1, block = 256, smem = 200 * 1024 }, out)
    cuasync.synchronize()
    assert.equal(200 * 1024 / 4 - 1, out:download("uint32_t")[0])
    out:close()
  end)

  for _, shape in ipairs({ { 2, 1, 1 }, { 4, 1, 1 }, { 8, 1, 1 }, { 2, 2, 1 }, { 2, 2, 2 }, { 16, 1, 1 } }) do
    gpu_it(("runs as clusters of %dx%dx%d #gpu"):format(shape[1], shape[2], shape[3]), function()
      local k = lib():kernel("where", "ptr")
      local grid = { shape[1] * 2, shape[2] * 3, shape[3] }
      local blocks = grid[1] * grid[2] * grid[3]
      local out = cuasync.alloc(blocks * 5 * 4)
      out:fill(0xFF)
      local size = shape[1] * shape[2] * shape[3]
      k:launch({ grid = grid, block = 32, cluster = shape, non_portable = size > 8 }, out)
      cuasync.synchronize()
      local r = out:download("uint32_t")
      local seen = {}
      for b = 0, blocks - 1 do
        assert.equal(size, r[5 * b + 1])
        assert.same({ shape[1], shape[2], shape[3] }, { r[5 * b + 2], r[5 * b + 3], r[5 * b + 4] })
        assert.is_true(r[5 * b] < size)
        seen[r[5 * b]] = (seen[r[5 * b]] or 0) + 1
      end
      for rank = 0, size - 1 do assert.equal(blocks / size, seen[rank]) end
      out:close()
    end)
  end

  gpu_it("times with events and bench #gpu", function()
    local k = lib():kernel("add", "ptr, f32, u32")
    local n = 2 ^ 24
    local x = cuasync.alloc(n * 4)
    x:fill(0)
    local run = k:prepare({ grid = n / 256, block = 256 }, x, 1, n)
    local a, b = cuasync.event(), cuasync.event()
    a:record(); run(); b:record(); b:synchronize()
    local ms = a:elapsed(b)
    assert.is_true(ms > 0 and ms < 1000)
    local r = cuasync.bench(run, { warmup = 2, reps = 5 })
    assert.is_true(r.min > 0 and r.min <= r.median and r.median <= r.max)
    assert.equal(5, #r.times)
    assert.equal(8, x:download("float", 1)[0])   -- 1 + 2 warm-up + 5 reps
    local vs = cuasync.bench_rounds({ { run = run }, { run = run } }, { rounds = 3, reps = 4, warmup = 1 })
    for _, v in ipairs(vs) do
      assert.equal(3, #v.times)
      assert.equal(cuasync.median(v.times), v.ms)
    end
    assert.equal(8 + 2 * 3 * 5, x:download("float", 1)[0])   -- 2 variants x 3 rounds x (1 + 4)
    a:close(); b:close(); a:close()
    x:close()
  end)

  gpu_it("reports device properties #gpu", function()
    local dev = cuasync.device(0)
    assert.is_true(#dev.name > 0)
    assert.is_true(dev.sms > 0 and dev.smem_optin >= 48 * 1024 and dev.l2_bytes > 0)
    if dev.cc == 90 then
      assert.equal("sm_90a", dev.arch)
      assert.is_true(dev.cluster)
    end
    assert.has.error(function() cuasync.device(-1) end, "cuasync.device: ordinal must be a non-negative integer (got -1)")
    assert.has.error(function() cuasync.device(999) end,
      ("cuasync.device: ordinal 999 out of range (this machine has %d device%s)"):format(cuasync.device_count(), cuasync.device_count() == 1 and "" or "s"))
  end)
end)
