-- Thread-block clusters (kernels-src/cluster.cu, cuasync/cluster.cuh): the preflight messages
-- (pinned on the CPU from the functions that build them), then on the GPU: launches really run
-- as clusters of the requested 1D/2D/3D shape up to 16 blocks, distributed shared memory
-- (histogram, ring exchange with the split barrier), a multicast tile that every block checks,
-- and the occupancy queries and refusals. Fresh random data, poisoned outputs.
local ffi = require("ffi")
local cuasync = require("cuasync")
local clusters = require("cuasync.model.clusters")
local H = require("helper")

local DEV = { smem_per_sm = 233472, reserved_smem_per_block = 1024, max_threads_per_sm = 2048, regs_per_sm = 65536,
              max_blocks_per_sm = 32 }

describe("clusters", function()
  local gpu_it = H.gpu_it(it, pending)

  it("names the limit when a cluster is too large or can never be resident", function()
    local info = { cluster = { 16, 1, 1 }, size = 16, max = 12, kernel = "k", block = { 1024, 1, 1 }, dev = DEV,
                   k = { threads = 1024, smem = 200000, regs = 32 } }
    assert.equal("cluster {16, 1, 1} has 16 blocks but kernel 'k' can have at most 12 per cluster with block {1024, 1, 1} and 200000 bytes of shared memory (cuOccupancyMaxPotentialClusterSize; an SM holds 1 such block, limited by shared memory: 200000 bytes per block (+1024 reserved) of 233472 per SM)",
      clusters.too_large(info))
    info.k = { threads = 1024, smem = 0, regs = 64 }
    assert.equal("cuOccupancyMaxActiveClusters is 0 for cluster {16, 1, 1} (16 blocks) of kernel 'k' with block {1024, 1, 1} and 0 bytes of shared memory: an SM holds 1 such block (limited by registers: 64 per thread x 1024 threads of 65536 per SM) and all 16 blocks of a cluster must be resident at once on the SMs of one GPC; use smaller clusters or lighter blocks",
      clusters.never_resident(info))
    info.k = { threads = 1024, smem = 0, regs = 128 }
    assert.equal("cuOccupancyMaxActiveClusters is 0 for cluster {16, 1, 1} of kernel 'k': one block {1024, 1, 1} does not fit on an SM (registers: 128 per thread x 1024 threads of 65536 per SM)",
      clusters.never_resident(info))
    info.k = { threads = 512, smem = 1000, regs = 16 }
    local n, name = clusters.limiter(info.k, DEV)
    assert.same({ 4, "threads" }, { n, name })
    info.k = { threads = 32, smem = 0, regs = 16 }
    n, name = clusters.limiter(info.k, DEV)
    assert.same({ 32, "blocks per SM" }, { n, name })
  end)

  local mod
  local function kernel(name, sig)
    mod = mod or cuasync.program{ file = "cluster.cu" }:compile()
    return mod:kernel(name, sig)
  end

  local SHAPES = { { 1, 1, 1 }, { 2, 1, 1 }, { 4, 1, 1 }, { 8, 1, 1 }, { 16, 1, 1 }, { 2, 2, 1 }, { 4, 2, 1 },
                   { 1, 8, 1 }, { 4, 4, 1 }, { 2, 2, 2 }, { 1, 2, 4 }, { 2, 2, 4 } }
  for _, shape in ipairs(SHAPES) do
    gpu_it(("runs as clusters of %dx%dx%d, each block where it should be #gpu"):format(shape[1], shape[2], shape[3]), function()
      local k = kernel("cluster_where", "ptr")
      local nc = { 1 + H.random_u32() % 3, 1 + H.random_u32() % 3, 1 + H.random_u32() % 2 }
      local grid = { shape[1] * nc[1], shape[2] * nc[2], shape[3] * nc[3] }
      local blocks = grid[1] * grid[2] * grid[3]
      local size = shape[1] * shape[2] * shape[3]
      local out = cuasync.alloc(blocks * 13 * 4)
      out:fill(0xA5)
      -- the scheduling-policy preference goes along on some shapes (it must not change the shape)
      local policy = ({ [4] = "spread", [8] = "load_balancing", [16] = "spread" })[size]
      k:launch({ grid = grid, block = 32, cluster = shape, non_portable = size > 8, cluster_policy = policy }, out)
      cuasync.synchronize()
      local r = out:download("uint32_t", blocks * 13)
      for z = 0, grid[3] - 1 do
        for y = 0, grid[2] - 1 do
          for x = 0, grid[1] - 1 do
            local b = x + grid[1] * (y + grid[2] * z)
            local o = 13 * b
            local cx, cy, cz = x % shape[1], y % shape[2], z % shape[3]
            local want = { cx + shape[1] * (cy + shape[2] * cz), size, cx, cy, cz, shape[1], shape[2], shape[3],
                           math.floor(x / shape[1]), math.floor(y / shape[2]), math.floor(z / shape[3]),
                           nc[1] * nc[2] * nc[3], 1 }
            for i = 1, 13 do
              if r[o + i - 1] ~= want[i] then
                error(("block (%d, %d, %d): word %d is %d, expected %d"):format(x, y, z, i - 1, r[o + i - 1], want[i]))
              end
            end
          end
        end
      end
      out:close()
    end)
  end

  gpu_it("a launch without cluster dims is a cluster of one, not an explicit cluster #gpu", function()
    local out = cuasync.alloc(4 * 13 * 4)
    out:fill(0xA5)
    kernel("cluster_where", "ptr"):launch({ grid = 4, block = 32 }, out)
    cuasync.synchronize()
    local r = out:download("uint32_t", 4 * 13)
    for b = 0, 3 do
      assert.same({ 0, 1, 0 }, { r[13 * b], r[13 * b + 1], r[13 * b + 12] })
    end
    out:close()
  end)

  gpu_it("a kernel compiled with __cluster_dims__ runs in them, and refuses other dims #gpu", function()
    local src = [[
#include <cuasync/cluster.cuh>
extern "C" __global__ void __cluster_dims__(2, 1, 1) fixed(unsigned *out)
{ if (threadIdx.x == 0) out[blockIdx.x] = cuasync::cluster::size() * 16 + cuasync::cluster::rank(); }
]]
    local k = cuasync.program{ source = src, name = "fixed.cu" }:compile():kernel("fixed", "ptr")
    local out = cuasync.alloc(16)
    out:fill(0xA5)
    k:launch({ grid = 4, block = 32 }, out)
    cuasync.synchronize()
    local r = out:download("uint32_t", 4)
    for b = 0, 3 do assert.equal(32 + b % 2, r[b]) end
    assert.has.error(function() k:launch({ grid = 4, block = 32, cluster = 4 }, out) end,
      "cuasync.launch: cluster {4, 1, 1} differs from kernel 'fixed''s __cluster_dims__ {2, 1, 1}")
    out:close()
  end)

  gpu_it("answers max_cluster_size and max_active_clusters, and refuses a cluster too large for the config #gpu", function()
    local k = kernel("cluster_histogram", "ptr, u64, ptr, u32")
    local dev = cuasync.device(0)
    assert.equal(8, k:max_cluster_size({ grid = 16, block = 256 }))
    assert.equal(16, k:max_cluster_size({ grid = 16, block = 256, non_portable = true }))
    for _, size in ipairs({ 1, 2, 4, 8, 16 }) do
      local n = k:max_active_clusters({ grid = size, block = 256, cluster = size, non_portable = size > 8, smem = 8192 })
      assert.is_true(n >= 1 and n * size <= dev.sms * dev.max_blocks_per_sm, ("size %d: %d active clusters"):format(size, n))
    end
    -- one block per SM (200 KiB of shared memory each): a 16-block cluster needs 16 SMs of one GPC
    local cfg = { grid = 16, block = 1024, smem = 200 * 1024, non_portable = true }
    local max = k:max_cluster_size(cfg)
    assert.is_true(max >= 1 and max <= 16)
    if max < 16 then
      cfg.cluster = 16
      local attrs = k:attributes()
      assert.has.error(function() k:launch(cfg, 0, 0, 0, 0) end, "cuasync.launch: " .. clusters.too_large({
        cluster = { 16, 1, 1 }, size = 16, max = max, kernel = "cluster_histogram", block = { 1024, 1, 1 }, dev = dev,
        k = { threads = 1024, smem = 200 * 1024 + attrs.static_smem, regs = attrs.regs } }))
    end
    assert.has.error(function() k:max_active_clusters({ grid = 16, block = 256 }) end,
      "cuasync.kernel.max_active_clusters: cfg.cluster is required (the cluster shape to count)")
  end)

  for _, size in ipairs({ 1, 2, 4, 8, 16 }) do
    gpu_it(("a histogram in the distributed shared memory of clusters of %d matches the CPU #gpu"):format(size), function()
      local n, nbins = 2 ^ 20 + H.random_u32() % 4096, 4096
      local data, h = H.random_words(n)
      local want = {}
      for i = 0, nbins - 1 do want[i] = 0 end
      for i = 0, n - 1 do local bin = h[i] % nbins; want[bin] = want[bin] + 1 end
      local hist = cuasync.alloc(nbins * 4)
      for _, which in ipairs({ "cluster", "global" }) do
        hist:fill(0)
        if which == "cluster" then
          kernel("cluster_histogram", "ptr, u64, ptr, u32"):launch({ grid = size * 8, block = 256, cluster = size,
            non_portable = size > 8, smem = nbins / size * 4 }, data, n, hist, nbins)
        else
          kernel("global_histogram", "ptr, u64, ptr, u32"):launch({ grid = 64, block = 256 }, data, n, hist, nbins)
        end
        cuasync.synchronize()
        local got = hist:download("uint32_t", nbins)
        for i = 0, nbins - 1 do
          if got[i] ~= want[i] then error(("%s histogram: bin %d is %d, expected %d"):format(which, i, got[i], want[i])) end
        end
      end
      data:close(); hist:close()
    end)
  end

  for _, size in ipairs({ 1, 2, 4, 8, 16 }) do
    gpu_it(("a ring exchange through shared memory with the split barrier, clusters of %d #gpu"):format(size), function()
      local nclusters, per_block = 3, 1000 + H.random_u32() % 3000
      local blocks = nclusters * size
      local tokens, ht = H.random_words(blocks)
      local input, hi = H.random_words(blocks * per_block)
      local out = cuasync.alloc(blocks * 8)
      out:fill(0xA5)
      kernel("cluster_ring", "ptr, ptr, u32, ptr"):launch({ grid = blocks, block = 128, cluster = size,
        non_portable = size > 8 }, tokens, input, per_block, out)
      cuasync.synchronize()
      local got = out:download("uint32_t", blocks * 2)
      for c = 0, nclusters - 1 do
        local total = 0
        for r = 0, size - 1 do total = (total + ht[c * size + r]) % 2 ^ 32 end
        for r = 0, size - 1 do
          local b = c * size + r
          local sum = 0
          for i = 0, per_block - 1 do sum = (sum + hi[b * per_block + i]) % 2 ^ 32 end
          assert.equal(total, got[2 * b], ("block %d: the ring's all-reduce"):format(b))
          assert.equal(sum, got[2 * b + 1], ("block %d: the local work beside the barrier"):format(b))
        end
      end
      tokens:close(); input:close(); out:close()
    end)
  end

  for _, size in ipairs({ 2, 4, 8, 16 }) do
    gpu_it(("one multicast tile load lands in all %d blocks of a cluster, each checks its copy and arrives remotely #gpu"):format(size), function()
      local W, Hh = 4 * (30 + H.random_u32() % 30), 20 + H.random_u32() % 30
      local b0, b1 = 32, 8
      local mat, h = H.random_words(W * Hh)
      local tm = cuasync.tensormap{ buffer = mat, dtype = "u32", dims = { W, Hh }, box = { b0, b1 } }
      local n0, n1 = math.ceil(W / b0), math.ceil(Hh / b1)
      local blocks = n0 * n1 * size
      local sums, bad, released = cuasync.alloc(blocks * 4), cuasync.alloc(blocks * 4), cuasync.alloc(n0 * n1 * 4)
      sums:fill(0xA5); bad:fill(0xA5); released:fill(0xA5)
      kernel("cluster_multicast_check", "tensormap, ptr, u32, u32, u32, u32, u32, ptr, ptr, ptr"):launch(
        { grid = blocks, block = 128, cluster = size, non_portable = size > 8, smem = tm.smem_bytes },
        tm, mat, W, Hh, b0, b1, n0, sums, bad, released)
      cuasync.synchronize()
      local s, w = sums:download("uint32_t", blocks), bad:download("uint32_t", blocks)
      local rel = released:download("uint32_t", n0 * n1)
      for ci = 0, n0 * n1 - 1 do
        local x0, y0, want = (ci % n0) * b0, math.floor(ci / n0) * b1, 0
        for y = y0, y0 + b1 - 1 do
          for x = x0, x0 + b0 - 1 do
            if x < W and y < Hh then want = (want + h[y * W + x]) % 2 ^ 32 end
          end
        end
        assert.equal(1, rel[ci], ("cluster %d: rank 0 saw every block's remote arrive"):format(ci))
        for r = 0, size - 1 do
          local b = ci * size + r
          assert.equal(0, w[b], ("cluster %d rank %d: elements that differ from global memory"):format(ci, r))
          assert.equal(want, s[b], ("cluster %d rank %d: the sum of its copy"):format(ci, r))
        end
      end
      mat:close(); sums:close(); bad:close(); released:close()
    end)
  end
end)
