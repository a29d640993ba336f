-- Module globals (mod:global) and the launch paths built on launch.lua: cooperative launches,
-- the k:launch cache per config identity, and queries that leave no attribute behind.
local cuasync = require("cuasync")
local H = require("helper")
local ffi = require("ffi")
local gpu_it = H.gpu_it(it, pending)

local SRC = [[
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__device__ unsigned table[64];
__constant__ float scale[4];
extern "C" __global__ void use_globals(unsigned *out)
{
  const unsigned i = threadIdx.x;
  if (i < 64) out[i] = table[i] * (unsigned)scale[i % 4];
}
// every block adds its id, a grid-wide sync, then every block reads the total: only correct when
// every block of the grid is resident and the sync is real
extern "C" __global__ void grid_sum(unsigned *acc, unsigned *out)
{
  if (threadIdx.x == 0) atomicAdd(acc, blockIdx.x + 1);
  cg::this_grid().sync();
  if (threadIdx.x == 0) out[blockIdx.x] = atomicAdd(acc, 0);
}
extern "C" __global__ void bump(unsigned *p) { atomicAdd(p, 1u); }
__device__ unsigned hits;
extern "C" __global__ void no_args() { atomicAdd(&hits, 1u); }
]]

describe("module", function()
  gpu_it("global() gives a buffer view of __device__ and __constant__ variables #gpu", function()
    local mod = cuasync.program{ source = SRC, name = "globals.cu" }:compile()
    local t, s = mod:global("table"), mod:global("scale")
    assert.equal(256, t:size())
    assert.equal(16, s:size())
    local vals = ffi.new("uint32_t[64]")
    for i = 0, 63 do vals[i] = H.random_u32() % 1000 end
    t:upload(vals)
    s:upload(ffi.new("float[4]", 1, 2, 3, 4))
    local out = cuasync.alloc(256):fill(0xAB)
    mod:kernel("use_globals", "ptr"):launch({ grid = 1, block = 64 }, out)
    local got = out:download("uint32_t")
    for i = 0, 63 do assert.equal(vals[i] * (i % 4 + 1), got[i]) end
    local back = t:download("uint32_t")
    for i = 0, 63 do assert.equal(vals[i], back[i]) end
    assert.has.error(function() mod:global("nope") end,
      "cuasync.module.global: program globals.cu has no __device__ or __constant__ variable 'nope' (declare it extern \"C\", or list a C++ name in the program's expressions)")
    t:close()   -- a view: only forgotten
    assert.has.error(function() t:download() end, "cuasync.buffer.download: the buffer is closed")
    mod:close()
    assert.has.error(function() s:download() end, "cuasync.buffer.download: the buffer is closed")
  end)

  gpu_it("cooperative launches sync the whole grid, and a grid too large is refused first #gpu", function()
    local mod = cuasync.program{ source = SRC, name = "globals.cu" }:compile()
    local k = mod:kernel("grid_sum", "ptr, ptr")
    local dev = cuasync.device()
    local per_sm = k:occupancy(128, 0)
    local blocks = dev.sms * math.min(per_sm, 2)
    local acc, out = cuasync.alloc(4):fill(0), cuasync.alloc(blocks * 4):fill(0xFF)
    k:launch({ grid = blocks, block = 128, cooperative = true }, acc, out)
    local got = out:download("uint32_t")
    local want = blocks * (blocks + 1) / 2
    for b = 0, blocks - 1 do assert.equal(want, got[b]) end
    local too_many = per_sm * dev.sms + 1
    assert.has.error(function() k:launch({ grid = too_many, block = 128, cooperative = true }, acc, out) end,
      ("cuasync.launch: cooperative launch of kernel 'grid_sum' has %d blocks but only %d can be resident at once (%d per SM x %d SMs with block {128, 1, 1} and 0 bytes of dynamic shared memory): a grid-wide sync needs every block resident"):format(
        too_many, too_many - 1, per_sm, dev.sms))
  end)

  gpu_it("k:launch caches per config identity and rechecks a changed config #gpu", function()
    local mod = cuasync.program{ source = SRC, name = "globals.cu" }:compile()
    local k = mod:kernel("bump", "ptr")
    local p = cuasync.alloc(4):fill(0)
    local cfg = { grid = 3, block = 32 }
    for _ = 1, 10 do k:launch(cfg, p) end
    k:launch({ grid = 3, block = 32 }, p)        -- a new table, the same identity
    assert.equal(1, k.nruns)
    cfg.grid = 2
    k:launch(cfg, p)                              -- changed: a new key, checked
    assert.equal(2, k.nruns)
    cfg.grid = 0
    assert.has.error(function() k:launch(cfg, p) end, "cuasync.launch: grid.x must be a positive integer (got 0)")
    cfg.grid, cfg.blocks = 1, 1
    assert.has.error(function() k:launch(cfg, p) end,
      "cuasync.launch: unknown field 'blocks' (fields: block, cluster, cluster_policy, cooperative, grid, non_portable, programmatic, smem, stream)")
    cuasync.synchronize()
    assert.equal(11 * 96 + 64, p:download("uint32_t", 1)[0])
    -- a kernel without parameters, launched again through the cache
    local z = mod:kernel("no_args", "")
    mod:global("hits"):fill(0)
    for _ = 1, 3 do z:launch({ grid = 2, block = 32 }) end
    assert.equal(192, mod:global("hits"):download("uint32_t", 1)[0])
    assert.has.error(function() k:launch({ grid = 3, block = 32 }) end,
      "cuasync.launch: kernel 'bump' takes 1 argument (ptr) and none were given yet")
  end)

  gpu_it("cluster queries leave the kernel's attributes as they were #gpu", function()
    local mod = cuasync.program{ source = SRC, name = "globals.cu" }:compile()
    local k = mod:kernel("bump", "ptr")
    local before = k:attributes()
    assert.is_true(k:max_active_clusters({ grid = 16, block = 128, cluster = 16, non_portable = true, smem = 100000 }) >= 0)
    assert.is_true(k:max_cluster_size({ grid = 16, block = 128, non_portable = true, smem = 100000 }) >= 1)
    assert.is_true(k:occupancy(128, 100000) >= 1)
    local after = k:attributes()
    assert.equal(before.max_dynamic_smem, after.max_dynamic_smem)
    assert.equal(before.non_portable_cluster_allowed, after.non_portable_cluster_allowed)
    -- the driver agrees with the attributes kept on the kernel (read once, kept in step)
    local driver = k:read_attributes()
    assert.equal(before.max_dynamic_smem, driver.max_dynamic_smem)
    assert.equal(before.non_portable_cluster_allowed, driver.non_portable_cluster_allowed)
    -- a launch raises them for good, and the kept table follows the driver
    k:launch({ grid = 1, block = 32, smem = 100000 }, mod:global("hits"))
    cuasync.synchronize()
    assert.equal(100000, k:attributes().max_dynamic_smem)
    assert.equal(100000, k:read_attributes().max_dynamic_smem)
  end)
end)
