-- Launch configurations checked before the driver (lua/cuasync/model/launch_rules.lua, bound to a
-- kernel by lua/cuasync/launch.lua): against an sm_90 device's limits (no GPU needed) and a
-- kernel's attributes.
local cuasync = require("cuasync")
local check = cuasync.check_launch
local sm90 = cuasync.limits.sm_90
local kattrs = { max_threads = 768, static_smem = 1024, required_cluster = { 0, 0, 0 } }

describe("cuasync launch config", function()
  it("normalizes dims", function()
    local c = check({ grid = 132, block = { 128, 2 }, smem = 0 }, sm90)
    assert.same({ 132, 1, 1 }, c.grid)
    assert.same({ 128, 2, 1 }, c.block)
    assert.equal(256, c.threads)
    c = check({ grid = { 8, 2 }, block = 64, cluster = { 4, 2 } }, sm90)
    assert.same({ 4, 2, 1 }, c.cluster)
  end)

  it("allows up to 16 blocks per cluster with non_portable", function()
    local c = check({ grid = 32, block = 32, cluster = 16, non_portable = true }, sm90)
    assert.same({ 16, 1, 1 }, c.cluster)
  end)

  local cases = {
    { nil, "cuasync.launch: config must be a table {grid = ..., block = ...} (got nil)" },
    { { block = 1 }, "cuasync.launch: grid is required" },
    { { grid = 1 }, "cuasync.launch: block is required" },
    { { grid = 1, block = 1, blocks = 2 }, "cuasync.launch: unknown field 'blocks' (fields: block, cluster, cluster_policy, cooperative, grid, non_portable, programmatic, smem, stream)" },
    { { grid = 0, block = 1 }, "cuasync.launch: grid.x must be a positive integer (got 0)" },
    { { grid = -4, block = 1 }, "cuasync.launch: grid.x must be a positive integer (got -4)" },
    { { grid = 1.5, block = 1 }, "cuasync.launch: grid.x must be a positive integer (got 1.5)" },
    { { grid = { 1, 0 }, block = 1 }, "cuasync.launch: grid.y must be a positive integer (got 0)" },
    { { grid = { 1, 1, 1, 1 }, block = 1 }, "cuasync.launch: grid must have 1 to 3 dimensions (got 4)" },
    { { grid = {}, block = 1 }, "cuasync.launch: grid must have 1 to 3 dimensions (got 0)" },
    { { grid = "8", block = 1 }, "cuasync.launch: grid must be a number or {x[, y[, z]]} (got string)" },
    { { grid = { 1, 70000 }, block = 1 }, "cuasync.launch: grid.y = 70000 exceeds the device's limit of 65535" },
    { { grid = 1, block = 2048 }, "cuasync.launch: block.x = 2048 exceeds the device's limit of 1024" },
    { { grid = 1, block = { 1, 1, 65 } }, "cuasync.launch: block.z = 65 exceeds the device's limit of 64" },
    { { grid = 1, block = { 64, 32 } }, "cuasync.launch: block {64, 32, 1} has 2048 threads (at most 1024 per block on this device)" },
    { { grid = 1, block = 1, smem = -1 }, "cuasync.launch: smem must be a non-negative integer number of bytes (got -1)" },
    { { grid = 1, block = 1, smem = 232449 }, "cuasync.launch: smem = 232449 plus 0 bytes of static shared memory exceeds the device's 232448 bytes per block (smem_optin)" },
    { { grid = 10, block = 1, cluster = 4 }, "cuasync.launch: grid.x = 10 is not divisible by cluster.x = 4 (the grid must be a whole number of clusters)" },
    { { grid = { 4, 3 }, block = 1, cluster = { 2, 2 } }, "cuasync.launch: grid.y = 3 is not divisible by cluster.y = 2 (the grid must be a whole number of clusters)" },
    { { grid = 16, block = 1, cluster = 16 }, "cuasync.launch: cluster {16, 1, 1} has 16 blocks (at most 8 portable; set non_portable = true for up to 16)" },
    { { grid = 32, block = 1, cluster = 32, non_portable = true }, "cuasync.launch: cluster {32, 1, 1} has 32 blocks (at most 16, and more than 8 needs non_portable = true)" },
    { { grid = 4, block = 1, cluster = 0 }, "cuasync.launch: cluster.x must be a positive integer (got 0)" },
    { { grid = 4, block = 1, cluster = 2, non_portable = 1 }, "cuasync.launch: non_portable must be a boolean (got number)" },
    { { grid = 4, block = 1, cluster = 2, cluster_policy = "fast" }, 'cuasync.launch: cluster_policy must be "default", "spread" or "load_balancing" (got "fast")' },
    { { grid = 4, block = 1, cluster_policy = "spread" }, "cuasync.launch: cluster_policy needs cluster dims" },
    { { grid = 4, block = 1, programmatic = "yes" }, "cuasync.launch: programmatic must be a boolean (got string)" },
  }
  for i, c in ipairs(cases) do
    it("rejects bad config " .. i .. " before the driver", function()
      assert.has.error(function() check(c[1], sm90) end, c[2])
    end)
  end

  it("takes programmatic = true on sm_90 and refuses it below, for the device and for the kernel", function()
    assert.is_true(check({ grid = 2, block = 32, programmatic = true }, sm90).programmatic)
    assert.is_false(check({ grid = 2, block = 32 }, sm90).programmatic)
    local sm80 = {}
    for k, v in pairs(sm90) do sm80[k] = v end
    sm80.cc, sm80.name = 80, "sm_80 (A100)"
    assert.has.error(function() check({ grid = 2, block = 32, programmatic = true }, sm80) end,
      "cuasync.launch: programmatic = true needs compute capability 9.0 or newer (programmatic dependent launch); sm_80 (A100) is 8.0")
    assert.has.error(function() check({ grid = 2, block = 32, programmatic = true }, sm90, { max_threads = 1024, static_smem = 0, binary_version = 80 }, "k") end,
      "cuasync.launch: programmatic = true: kernel 'k' is built for sm_80, which has no griddepcontrol (build it for sm_90 or newer)")
  end)

  it("checks the kernel's own limits", function()
    assert.has.error(function() check({ grid = 1, block = 1024 }, sm90, kattrs, "k") end,
      "cuasync.launch: block {1024, 1, 1} has 1024 threads but kernel 'k' can run at most 768 per block (its register use limits it)")
    assert.has.error(function() check({ grid = 1, block = 1, smem = 232448 }, sm90, kattrs, "k") end,
      "cuasync.launch: smem = 232448 plus 1024 bytes of static shared memory exceeds the device's 232448 bytes per block (smem_optin)")
    local old = { max_threads = 1024, static_smem = 0, required_cluster = { 0, 0, 0 }, binary_version = 80 }
    assert.has.error(function() check({ grid = 4, block = 1, cluster = 2 }, sm90, old, "k") end,
      "cuasync.launch: kernel 'k' is built for sm_80, which has no thread-block clusters (build it for sm_90 or newer to launch it with cluster dims)")
    check({ grid = 4, block = 1 }, sm90, old, "k")   -- without cluster dims it is fine
    local fixed = { max_threads = 1024, static_smem = 0, required_cluster = { 2, 1, 1 } }
    assert.has.error(function() check({ grid = 4, block = 1, cluster = 4 }, sm90, fixed, "k") end,
      "cuasync.launch: cluster {4, 1, 1} differs from kernel 'k''s __cluster_dims__ {2, 1, 1}")
  end)

  it("bench_rounds refuses what it cannot time", function()
    assert.has.error(function() cuasync.bench_rounds({ { run = 1 } }) end, "cuasync.bench_rounds: variants[1].run must be a function")
    assert.has.error(function() cuasync.bench_rounds({}, { round = 2 }) end,
      "cuasync.bench_rounds: unknown field 'round' (fields: before, early_exit, host, keep_going, observe, reps, rounds, settle_ms, warmup)")
    assert.has.error(function() cuasync.bench_rounds({}, { rounds = 0 }) end, "cuasync.bench_rounds: rounds must be a positive integer (got 0)")
  end)

  it("refuses clusters on a device without them", function()
    local old = { name = "sm_80 test device", max_threads_per_block = 1024, max_block = { 1024, 1024, 64 },
                  max_grid = { 2147483647, 65535, 65535 }, smem_optin = 166912, cluster = false }
    assert.has.error(function() check({ grid = 2, block = 1, cluster = 2 }, old) end,
      "cuasync.launch: cluster launch needs a device that supports thread-block clusters (compute capability 9.0 or newer); sm_80 test device does not")
  end)
end)

describe("cuasync.limits.sm_90", function()
  it("holds sm_90's per-SM limits beside the per-block ones, under the names a device's :limits() has", function()
    assert.same({ 2048, 64, 32, 65536, 233472, 232448, 255 },
                { sm90.max_threads_per_sm, sm90.max_warps_per_sm, sm90.max_blocks_per_sm, sm90.regs_per_sm,
                  sm90.smem_per_sm, sm90.smem_optin, sm90.regs_per_thread })
    assert.equal(sm90.max_threads_per_sm / 32, sm90.max_warps_per_sm)
    -- the cluster preflight's occupancy rule reads these names: the table is a device to it
    local per_sm, limiter = cuasync.model.clusters.limiter({ threads = 256, smem = 100 * 1024, regs = 32 }, sm90)
    assert.same({ 2, "shared memory" }, { per_sm, limiter })   -- 233472 / (102400 + 1024)
    per_sm, limiter = cuasync.model.clusters.limiter({ threads = 1024, smem = 0, regs = 64 }, sm90)
    assert.same({ 1, "registers" }, { per_sm, limiter })       -- 64 x 1024 = 65536 of 65536
  end)

  local gpu_it = require("helper").gpu_it(it, pending)
  gpu_it("has the fields dev:limits() has #gpu", function()
    local got = cuasync.device():limits()
    for k, v in pairs(sm90) do assert.equal(type(v), type(got[k]), k) end
    for k in pairs(got) do assert.is_not_nil(sm90[k], k) end
    if cuasync.device().cc == 90 then
      for _, k in ipairs({ "max_threads_per_sm", "max_warps_per_sm", "max_blocks_per_sm", "regs_per_sm", "smem_per_sm", "smem_optin" }) do
        assert.equal(sm90[k], got[k], k)
      end
    end
  end)
end)
