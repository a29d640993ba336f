-- Every kernel under kernels-src (and the spec-only ones) compiles for sm_90a, and its PTX holds the instructions it is
-- meant to use: a silent fallback to ordinary loads fails here, on a machine without a GPU.
local cuasync = require("cuasync")
local fs = require("cuasync.fs")

local EXPECT = {
  ["cancel_probe.cu"] = { "ld.volatile.global.u32", "nanosleep.u32", "%globaltimer" },
  ["data.cu"] = {   -- the generator's double arithmetic rounds each step (as the host does); the compare's warp reductions
    "add.rn.f64", "mul.rn.f64", "cvt.rn.f32.f64", "cvt.rn.bf16.f32", "cvt.rn.f16.f32", "shfl.sync.down.b32",
    "atom.global.add.u64", "atom.global.min.u64", "atom.global.max.u64",
  },
  ["copy_bulk.cu"] = {
    "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes",
    "cp.async.bulk.global.shared::cta.bulk_group",
    "cp.async.bulk.commit_group", "cp.async.bulk.wait_group.read", "cp.async.bulk.wait_group 0",
    "mbarrier.init.shared::cta.b64", "mbarrier.arrive.expect_tx.release.cta.shared::cta.b64",
    "mbarrier.try_wait.parity.shared::cta.b64", "fence.mbarrier_init.release.cluster",
  },
  ["stage_copy.cu"] = {
    "cp.async.ca.shared.global [%r1], [%rd34], 4, p;",   -- ignore-src zero-fill
    "cp.async.cg.shared.global", "cp.async.ca.shared.global", "cp.async.commit_group", "cp.async.wait_group 0",
    "ld.global.v4.u32",                                   -- stage_sync: the ordinary-load baseline
  },
  ["block_async.cu"] = {
    "cp.async.cg.shared.global", "cp.async.commit_group", "cp.async.wait_group 3",
    "cp.async.mbarrier.arrive.noinc.shared::cta.b64", "mbarrier.try_wait.parity.shared::cta.b64",
  },
  ["split_arrive.cu"] = { "mbarrier.arrive.shared::cta.b64", "mbarrier.try_wait.parity.shared::cta.b64" },
  ["warp_specialized.cu"] = {
    "cp.async.cg.shared.global", "cp.async.mbarrier.arrive.noinc.shared::cta.b64",
    "mbarrier.arrive.shared::cta.b64", "mbarrier.try_wait.parity.shared::cta.b64",
  },
  ["pipelines.cu"] = {
    "cp.async.cg.shared.global", "cp.async.mbarrier.arrive.noinc.shared::cta.b64",
    "mbarrier.try_wait.parity.shared::cta.b64", "elect.sync",
    "mbarrier.arrive.expect_tx.release.cta.shared::cta.b64",
    "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes",
  },
  ["libcudacxx_pipelines.cu"] = {   -- what libcu++ lowers cuda::memcpy_async to on sm_90
    "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes", "cp.async.cg.shared.global",
    "cp.async.mbarrier.arrive", "mbarrier.try_wait",
  },
  ["bulk_add_one.cu"] = {
    "elect.sync", "mbarrier.arrive.expect_tx.release.cta.shared::cta.b64",
    "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes", "fence.proxy.async.shared::cta",
    "cp.async.bulk.global.shared::cta.bulk_group", "cp.async.bulk.wait_group.read 0", "cp.async.bulk.wait_group 0",
  },
  ["tensor_copy.cu"] = {
    "cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
    "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
    "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
    "cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
    "cp.async.bulk.tensor.1d.global.shared::cta.tile.bulk_group", "cp.async.bulk.tensor.5d.global.shared::cta.tile.bulk_group",
    "cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group",
    "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster",
    "fence.proxy.async.shared::cta", "barrier.cluster.arrive.release.aligned", "%cluster_ctarank",
  },
  ["tensor_probe.cu"] = {
    "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
    "cp.async.bulk.tensor.3d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes",
    "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group", "fence.proxy.async.shared::cta",
    "mbarrier.try_wait.parity.shared::cta.b64",
  },
  ["tile_copy.cu"] = {
    "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
    "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group", "cp.async.bulk.wait_group.read 1",
    "prefetch.tensormap", "mbarrier.try_wait.parity.shared::cta.b64",
  },
  ["tile_transpose.cu"] = {
    "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
    "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group", "fence.proxy.async.shared::cta",
  },
  ["cluster.cu"] = {
    "%cluster_ctarank", "%cluster_nctarank", "%cluster_ctaid.x", "%cluster_nctaid.z", "%clusterid.y", "%nclusterid.x",
    "%is_explicit_cluster", "mapa.shared::cluster.u32", "red.relaxed.cluster.shared::cluster.add.u32",
    "st.shared::cluster.u32", "barrier.cluster.arrive.release;", "barrier.cluster.wait.acquire;",
    "barrier.cluster.arrive.release.aligned", "atom.global.add.u32",
    "mbarrier.arrive.release.cluster.shared::cluster.b64",
    "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster",
  },
  ["bulk_reduce.cu"] = {
    "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.u32",
    "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32",
    "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes", "cp.async.bulk.wait_group.read 0",
  },
  ["mbarrier_model.cu"] = {
    "mbarrier.init.shared::cta.b64", "mbarrier.arrive.shared::cta.b64", "mbarrier.arrive_drop.shared::cta.b64",
    "mbarrier.expect_tx.relaxed.cta.shared::cta.b64", "mbarrier.complete_tx.relaxed.cta.shared::cta.b64",
    "mbarrier.arrive.expect_tx.release.cta.shared::cta.b64", "mbarrier.test_wait.parity.shared::cta.b64",
    "mbarrier.test_wait.shared::cta.b64", "mbarrier.pending_count.b64",
  },
  ["tx_rules.cu"] = {
    "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster",
    "cp.async.bulk.tensor.3d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes",
    "mbarrier.try_wait.parity.shared::cta.b64", "mbarrier.complete_tx.relaxed.cta.shared::cta.b64",
  },
  ["pipeline_tma.cu"] = {
    "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
    "mbarrier.arrive.expect_tx.release.cta.shared::cta.b64", "mbarrier.try_wait.parity.shared::cta.b64",
    "fence.mbarrier_init.release.cluster", "st.global.v4",
  },
  ["planted_hangs.cu"] = {   -- built with the watchdog (P:program's default)
    "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes", "%globaltimer", "exit;",
    "mbarrier.try_wait.parity.shared::cta.b64",
  },
  ["gemm_tma.cu"] = {
    "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16", "setmaxnreg.inc.sync.aligned.u32",
    "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes", "wgmma.wait_group.sync.aligned 1",
  },
  ["gemm_ref.cu"] = { "ld.shared.f32", "atom.global.max.u32" },
  ["wgmma_desc.cu"] = { "st.global.u64" },
  ["watchdog_cost.cu"] = { "mbarrier.try_wait.parity.shared::cta.b64", "mbarrier.arrive.shared::cta.b64", "%clock64" },
  ["watchdog_canary.cu"] = {
    "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes", "exit;", "%globaltimer", "nanosleep",
  },
  ["cp_async_copy.cu"] = {   -- built from a cp.async plan (completion "mbarrier"), with the watchdog
    "cp.async.cg.shared.global", "cp.async.mbarrier.arrive.noinc.shared::cta.b64",
    "mbarrier.try_wait.parity.shared::cta.b64", "st.global.v4", "%globaltimer",
  },
  ["cp_async_ring.cu"] = {
    "cp.async.cg.shared.global", "cp.async.mbarrier.arrive.noinc.shared::cta.b64", "mbarrier.try_wait.parity.shared::cta.b64",
  },
  ["graph_steps.cu"] = { "griddepcontrol.launch_dependents;", "griddepcontrol.wait;", "%globaltimer" },
  ["graph_loop.cu"] = { "cudaGraphSetConditional", "bar.sync" },
  ["compare_words.cu"] = { "ld.global.v4.u32", "atom.global.add.u64" },
  ["probe_memory.cu"] = { "ld.global.cg.u32", "rem.u64", "cp.async.bulk.global.shared::cta.bulk_group", "mbarrier::complete_tx::bytes", "%globaltimer" },   -- the chase reads through L2 only; the load is a bulk copy
  ["cp_async_cxx.cu"] = { "cp.async.cg.shared.global", "cp.async.mbarrier.arrive", "mbarrier.try_wait" },
  ["order_log.cu"] = {   -- built from a plan with an order (two groups, two turns), with the watchdog
    "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes", "mbarrier.try_wait.parity.shared::cta.b64",
    "mbarrier.arrive.shared::cta.b64", "atom.shared.add.u32", "nanosleep", "%globaltimer",
  },
  ["layout_pair.cu"] = {   -- two pipelines of one cuasync.layout, with the watchdog
    "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes", "mbarrier.try_wait.parity.shared::cta.b64",
    "bar.sync", "%globaltimer",
  },
  ["sched_sum.cu"] = {   -- built from a stream-K scheduler, with the watchdog: the turnstile
    "ld.acquire.gpu.global.u32", "fence.acq_rel.gpu", "st.relaxed.gpu.global.u32", "%globaltimer", "ld.global.cg.f32",
  },
  ["pipeline_multicast.cu"] = {
    "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster",
    "mbarrier.arrive.release.cta.shared::cluster.b64", "barrier.cluster.arrive.release.aligned",
  },
}

-- Kernels built from a cuasync.pipeline plan: the program comes from P:program (plan-only maps).
local function plan_map(box)
  return cuasync.tensormap{ ptr = 2 ^ 20, bytes = 2 ^ 30, encode = false, dtype = "f32", dims = { 4096, 4096 }, box = box }
end
local BUILD = {
  ["cp_async_copy.cu"] = function(file)
    return cuasync.pipeline{ name = "cp", stages = 4, loads = { { cp_async = 16384, vector = 16, name = "x" } },
      producer = "all", consumer = { warps = 8 } }:program{ file = file, arch = "sm_90a" }
  end,
  ["pipeline_tma.cu"] = function(file)
    return cuasync.pipeline{ name = "tma", stages = 4, loads = { { map = plan_map{ 64, 32 }, name = "in" } },
      producer = { warps = 1 }, consumer = { warps = 4 } }:program{ file = file, arch = "sm_90a", defines = { BOX_X = 64, BOX_Y = 32 } }
  end,
  ["planted_hangs.cu"] = function(file)
    return cuasync.pipeline{ name = "hang", stages = 3, loads = { { map = plan_map{ 64, 32 }, name = "in" } },
      producer = { warps = 1 }, consumer = { warps = 4 } }:program{ file = file, arch = "sm_90a",
      defines = { BOX_X = 64, BOX_Y = 32, HANG = 2 } }
  end,
  ["gemm_tma.cu"] = function(file)
    local gemm = require("cuasync.kernels.gemm")
    local P = gemm.plan{ stages = 4, bm = 128, bn = 128, m = 1024, n = 1024, k = 1024 }
    assert.equal("gemm_tma.cu", file)
    return gemm.program(P, { arch = "sm_90a" })
  end,
  ["order_log.cu"] = function(file)
    return cuasync.pipeline{ name = "pingpong", stages = 2, stage_bytes = 1024, producer = { warps = 4 }, consumer = { warps = 8 },
      order = { name = "math", groups = 2, depth = 2 }, scratch = 4096 }:program{ file = file, arch = "sm_90a" }
  end,
  ["layout_pair.cu"] = function(file)
    local function P(name, stages)
      return cuasync.pipeline{ name = name, stages = stages, stage_bytes = 4096, producer = { warps = 1 }, consumer = { warps = 4 } }
    end
    return cuasync.layout{ name = "pair", pipelines = { P("xs", 3), P("ys", 2) }, regions = { sum = 4096 } }:program{ file = file, arch = "sm_90a" }
  end,
  ["sched_sum.cu"] = function(file)
    return cuasync.scheduler{ name = "toy", kind = "stream_k", m = 100, n = 70, k = 300, tile = { 16, 16 }, bk = 8,
      sms = 11 }:program{ file = file, arch = "sm_90a" }
  end,
  ["pipeline_multicast.cu"] = function(file)
    return cuasync.pipeline{ name = "mc", stages = 4, loads = { { map = plan_map{ 64, 16 }, name = "a" } }, multicast = { a = "x" },
      cluster = { 2, 1, 1 }, producer = { warps = 1 }, consumer = { warps = 2 } }:program{ file = file, arch = "sm_90a",
      defines = { BOX_X = 64, BOX_Y = 32 } }
  end,
}

-- The kernels under kernels-src (installed) and the spec-only ones under spec/support/kernels
-- (never installed), by name; FILE[name] is what cuasync.program{ file = } takes.
local FILE = {}
local SPEC_ONLY = "spec/support/kernels"
local function kernels()
  local list = {}
  for _, dir in ipairs({ cuasync.kernels_dir(), SPEC_ONLY }) do
    for _, name in ipairs(assert(fs.list(dir, ".cu"))) do
      list[#list + 1] = name
      FILE[name] = dir == SPEC_ONLY and (dir .. "/" .. name) or name
    end
  end
  return list
end

describe("kernels-src", function()
  it("every kernel has its expected instructions listed here", function()
    for _, k in ipairs(kernels()) do assert.is_not_nil(EXPECT[k], k .. " has no PTX expectations in kernels_spec") end
  end)

  for _, k in ipairs(kernels()) do
    it(k .. " compiles for sm_90a with the instructions it is about", function()
      local prog = BUILD[k] and BUILD[k](FILE[k]) or cuasync.program{ file = FILE[k], arch = "sm_90a" }
      local ptx = prog:ptx()
      assert.is_true(#prog:cubin() > 0)
      for _, ins in ipairs(EXPECT[k] or {}) do
        assert.truthy(ptx:find(ins, 1, true), k .. ": PTX lacks " .. ins)
      end
    end)
  end

  for _, stages in ipairs({ 1, 2, 3, 8 }) do
    it("copy_bulk.cu compiles with STAGES = " .. stages, function()
      local ptx = cuasync.program{ file = "copy_bulk.cu", arch = "sm_90a", defines = { STAGES = stages, CHUNK = 4096 } }:ptx()
      assert.truthy(ptx:find("cp.async.bulk.wait_group.read " .. math.min(1, stages - 1), 1, true))
    end)
  end

  it("copy_bulk.cu rejects a CHUNK that is not a multiple of 16", function()
    assert.has.error(function()
      cuasync.program{ file = "copy_bulk.cu", arch = "sm_90a", defines = { CHUNK = 100 } }:ptx()
    end)
    local ok, err = pcall(function() cuasync.program{ file = "copy_bulk.cu", arch = "sm_90a", defines = { CHUNK = 100 } }:ptx() end)
    assert.is_false(ok)
    assert.truthy(err:find("CHUNK must be a positive multiple of 16 bytes", 1, true), err)
  end)

  it("each device header compiles on its own", function()
    for _, h in ipairs({ "mbarrier.cuh", "cp_async.cuh", "bulk.cuh", "tma.cuh", "pipeline.cuh", "cluster.cuh", "cuasync.cuh" }) do
      local src = "#include <cuasync/" .. h .. '>\nextern "C" __global__ void k() {}\n'
      assert.is_true(#cuasync.program{ source = src, arch = "sm_90a" }:cubin() > 0, h)
    end
  end)

  it("a wrapper that needs sm_90 says so when used for sm_80", function()
    local src = '#include <cuasync/bulk.cuh>\nextern "C" __global__ void k() { cuasync::bulk::commit_group(); }\n'
    local ok, err = pcall(function() cuasync.program{ source = src, arch = "sm_80" }:ptx() end)
    assert.is_false(ok)
    assert.truthy(err:find("cuasync: commit_group needs sm_90 (PTX ISA 8.0)", 1, true), err)
    -- and including the header alone for sm_80 is fine
    assert.is_true(#cuasync.program{ source = '#include <cuasync/cuasync.cuh>\nextern "C" __global__ void k() {}\n', arch = "sm_80" }:cubin() > 0)
  end)

  it("finds the toolkit's CCCL headers without -I", function()
    local src = [[
#include <cuda/barrier>
#include <cuda/pipeline>
#include <cuda/ptx>
#include <cooperative_groups.h>
extern "C" __global__ void k(int *out) {
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  auto block = cooperative_groups::this_thread_block();
  if (block.thread_rank() == 0) init(&bar, block.size());
  block.sync();
  bar.arrive_and_wait();
  out[threadIdx.x] = 1;
}
]]
    local prog = cuasync.program{ source = src, arch = "sm_90a" }
    assert.truthy(prog:ptx():find("mbarrier", 1, true))
  end)
end)
