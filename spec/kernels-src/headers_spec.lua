-- kernels-src/cuasync/*.cuh: every wrapper, used once in one kernel compiled for sm_90a, emits the
-- PTX its comment promises; the sm_90-only ones refuse an older target by name; ring.cuh and
-- pipeline_cp_async.cuh stand alone and come with pipeline.cuh; a plan's pipeline refuses the other
-- completion kind's members by name; a bulk reduction PTX does not have refuses to compile. All on
-- the CPU (NVRTC only).
local cuasync = require("cuasync")

local ALL = [[
#include <cuasync/cuasync.cuh>
extern "C" __global__ void every_wrapper(const __grid_constant__ cuasync::tensormap map, unsigned *g, float *gf, long long *gs)
{
  __shared__ __align__(128) unsigned buf[1024];
  __shared__ cuasync::mbarrier_t bar;
  using namespace cuasync;
  mbarrier::init(&bar, 1); mbarrier::fence_init();
  auto st = mbarrier::arrive(&bar); mbarrier::arrive(&bar, 2u); mbarrier::arrive_drop(&bar);
  mbarrier::arrive_expect_tx(&bar, 32); mbarrier::expect_tx(&bar, 16); mbarrier::complete_tx(&bar, 16);
  g[0] = mbarrier::test_wait(&bar, st) + mbarrier::try_wait(&bar, st) + mbarrier::try_wait(&bar, st, 1000u)
       + mbarrier::test_wait_parity(&bar, 0) + mbarrier::try_wait_parity(&bar, 0) + mbarrier::try_wait_parity(&bar, 0, 100u)
       + mbarrier::pending_count(st);
  mbarrier::arrive_cluster(&bar, 0); mbarrier::wait(&bar, st); mbarrier::wait_parity(&bar, 1);
  g[5] = mbarrier::wait_parity_bounded(&bar, 0, 4);
  cp_async::copy_ca<4>(buf, g); cp_async::copy_ca<8>(buf, g); cp_async::copy_ca<16>(buf, g); cp_async::copy_cg(buf, g);
  cp_async::copy_ca_zfill<8>(buf, g, 4); cp_async::copy_cg_zfill(buf, g, 8); cp_async::copy_ca_ignore<4>(buf, g, true);
  cp_async::copy_cg_prefetch<64>(buf, g); cp_async::copy_cg_prefetch<256>(buf, g);
  cp_async::commit_group(); cp_async::wait_group<1>(); cp_async::wait_all();
  cp_async::mbarrier_arrive(&bar); cp_async::mbarrier_arrive_noinc(&bar);
  bulk::load(buf, g, 64, &bar); bulk::load_multicast(buf, g, 64, &bar, 3); bulk::copy_to_cluster(buf, buf + 64, 64, &bar, 1);
  bulk::prefetch_l2(g, 256); bulk::store(g, buf, 64);
  bulk::reduce_add(g, buf, 64); bulk::reduce_min((int *)g, (int *)buf, 64); bulk::reduce_max(gs, (long long *)buf, 64);
  bulk::reduce_add(gf, (float *)buf, 64); bulk::reduce_add((double *)gs, (double *)buf, 64);
  bulk::commit_group(); bulk::wait_group_read<0>(); bulk::wait_group<0>(); bulk::fence_proxy_async_shared();
  if (bulk::elect_one()) g[1] = 1;
  tma::prefetch_map(&map);
  tma::load(buf, &map, &bar, 1); tma::load(buf, &map, &bar, 1, 2); tma::load(buf, &map, &bar, 1, 2, 3);
  tma::load(buf, &map, &bar, 1, 2, 3, 4); tma::load(buf, &map, &bar, 1, 2, 3, 4, 5);
  tma::load_multicast(buf, &map, &bar, 3, 1, 2);
  tma::store(&map, buf, 1, 2, 3); tma::reduce_add(&map, buf, 1, 2, 3, 4); tma::prefetch(&map, 7, 8, 9, 10, 11);
  tma::load_im2col(buf, &map, &bar, 1, 2, 3, 1); tma::load_im2col(buf, &map, &bar, 1, 2, 3, 4, 1, 2);
  tma::load_im2col(buf, &map, &bar, 1, 2, 3, 4, 5, 1, 2, 3);
  {
    using namespace cuasync::cluster;
    const dim a = ctaid(), b = nctaid(), c = id(), d = count();
    g[3] = rank() + size() + a.x + b.y + c.z + d.x + is_cluster_launch();
    unsigned *peer = map_shared_rank(buf, 1); peer[0] = 1;
    const unsigned ra = map_shared_addr(buf, 1);
    store_u32(ra, 5); g[4] = load_u32(ra) + atomic_add_u32(ra, 2); red_add_u32(ra, 3);
    arrive(); arrive_relaxed(); wait(); sync(); arrive_remote(&bar, 1);
  }
  stage_state<4> s = stage_state<4>::producer_start(); s.advance(); g[2] = s.phase + s.index;
  pdl::launch_dependents(); pdl::wait();
  cuasync::graph::set_condition((cuasync::graph::condition)gs[1], g[5] != 0);
  mbarrier::inval(&bar);
}
]]

local EXPECT = {
  "mbarrier.init.shared::cta.b64", "fence.mbarrier_init.release.cluster",
  "mbarrier.arrive.shared::cta.b64", "mbarrier.arrive_drop.shared::cta.b64",
  "mbarrier.arrive.expect_tx.release.cta.shared::cta.b64", "mbarrier.expect_tx.relaxed.cta.shared::cta.b64",
  "mbarrier.complete_tx.relaxed.cta.shared::cta.b64", "mbarrier.test_wait.shared::cta.b64",
  "mbarrier.try_wait.shared::cta.b64", "mbarrier.test_wait.parity.shared::cta.b64",
  "mbarrier.try_wait.parity.shared::cta.b64", "mbarrier.pending_count.b64", "mapa.shared::cluster.u32",
  "mbarrier.arrive.release.cluster.shared::cluster.b64 _,", "mbarrier.inval.shared::cta.b64",
  "cp.async.ca.shared.global", "cp.async.cg.shared.global", "], 4, p;",
  "cp.async.cg.shared.global.L2::64B", "cp.async.cg.shared.global.L2::256B",
  "cp.async.commit_group", "cp.async.wait_group 1", "cp.async.wait_all",
  "cp.async.mbarrier.arrive.shared::cta.b64", "cp.async.mbarrier.arrive.noinc.shared::cta.b64",
  "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [",
  "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster",
  "cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes",
  "cp.async.bulk.prefetch.L2.global", "cp.async.bulk.global.shared::cta.bulk_group",
  "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.u32", "cp.reduce.async.bulk.global.shared::cta.bulk_group.min.s32",
  "cp.reduce.async.bulk.global.shared::cta.bulk_group.max.s64", "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32",
  "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f64",
  "cp.async.bulk.commit_group", "cp.async.bulk.wait_group.read 0", "cp.async.bulk.wait_group 0",
  "fence.proxy.async.shared::cta", "elect.sync", "prefetch.tensormap",
  "cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
  "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
  "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
  "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
  "cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
  "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster",
  "cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group",
  "cp.reduce.async.bulk.tensor.4d.global.shared::cta.add.tile.bulk_group",
  "cp.async.bulk.prefetch.tensor.5d.L2.global.tile",
  "cp.async.bulk.tensor.3d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes",
  "%cluster_ctaid.x", "%cluster_nctaid.y", "%clusterid.z", "%nclusterid.x", "%is_explicit_cluster", "mapa.u64",
  "ld.shared::cluster.u32", "st.shared::cluster.u32", "atom.relaxed.cluster.shared::cluster.add.u32",
  "red.relaxed.cluster.shared::cluster.add.u32", "barrier.cluster.arrive.release;", "barrier.cluster.arrive.relaxed;",
  "barrier.cluster.wait.acquire;",
  "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes",
  "cp.async.bulk.tensor.5d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes",
  "griddepcontrol.launch_dependents;", "griddepcontrol.wait;", "cudaGraphSetConditional",
}

local function compile_error(src, arch)
  local ok, err = pcall(function() return cuasync.program{ source = src, arch = arch }:ptx() end)
  assert.is_false(ok, "expected a compile error")
  return err
end

describe("device headers", function()
  it("every wrapper emits the PTX its comment names (sm_90a)", function()
    local prog = cuasync.program{ source = ALL, arch = "sm_90a" }
    local ptx = prog:ptx()
    assert.is_true(#prog:cubin() > 0)   -- and ptxas accepts all of it
    for _, ins in ipairs(EXPECT) do assert.truthy(ptx:find(ins, 1, true), "PTX lacks " .. ins) end
  end)

  for _, case in ipairs({
    { "cuasync::tma::load(0, 0, 0, 1)", "cuasync: tma::load needs sm_90 (PTX ISA 8.0)" },
    { "cuasync::bulk::elect_one()", "cuasync: elect_one needs sm_90 (PTX ISA 8.0)" },
    { "cuasync::bulk::reduce_add((unsigned *)0, (const unsigned *)0, 16)", "cuasync: reduce_add needs sm_90 (PTX ISA 8.0)" },
    { "cuasync::mbarrier::expect_tx(0, 16)", "cuasync: expect_tx needs sm_90 (PTX ISA 8.0)" },
    { "cuasync::cluster::map_shared_addr(0, 1)", "cuasync: map_shared_addr needs sm_90 (PTX ISA 8.0)" },
    { "cuasync::cluster::arrive()", "cuasync: arrive needs sm_90 (PTX ISA 8.0)" },
    { "cuasync::cluster::peer_rank<int>(0u)", "cuasync: peer_rank needs sm_90 (PTX ISA 8.0)" },
    { "cuasync::pdl::wait()", "cuasync: pdl::wait needs sm_90 (PTX ISA 8.0)" },
    { "cuasync::pdl::launch_dependents()", "cuasync: pdl::launch_dependents needs sm_90 (PTX ISA 8.0)" },
  }) do
    it("refuses " .. case[1] .. " for sm_80 by name", function()
      local src = '#include <cuasync/cuasync.cuh>\nextern "C" __global__ void k() { ' .. case[1] .. '; }\n'
      local err = compile_error(src, "sm_80")
      assert.truthy(err:find(case[2], 1, true), err)
    end)
  end

  it("the Ampere wrappers compile for sm_80", function()
    local src = [[
#include <cuasync/cuasync.cuh>
extern "C" __global__ void k(unsigned *g) {
  __shared__ __align__(16) unsigned buf[64];
  __shared__ cuasync::mbarrier_t bar;
  cuasync::mbarrier::init(&bar, 1);
  cuasync::cp_async::copy_cg(buf, g); cuasync::cp_async::mbarrier_arrive_noinc(&bar);
  while (!cuasync::mbarrier::test_wait_parity(&bar, 0)) {}
  g[0] = buf[0];
}
]]
    assert.truthy(cuasync.program{ source = src, arch = "sm_80" }:ptx():find("cp.async.mbarrier.arrive.noinc", 1, true))
  end)

  it("ring.cuh stands alone, and pipeline.cuh still brings the ring (sm_90a and sm_80)", function()
    for _, h in ipairs({ "ring.cuh", "pipeline.cuh" }) do
      local src = "#include <cuasync/" .. h .. ">\n" .. [[
extern "C" __global__ void k(unsigned *g) {
  __shared__ cuasync::pipeline_ring<2> ring;
  if (threadIdx.x == 0) ring.init(1, 1);
  __syncthreads();
  auto st = cuasync::stage_state<2>::consumer_start();
  ring.producer_arrive(st); ring.consumer_wait(st); ring.consumer_release(st);
  st.advance(3); g[0] = st.phase + st.index;
}
]]
      for _, arch in ipairs({ "sm_90a", "sm_80" }) do
        local ptx = cuasync.program{ source = src, arch = arch }:ptx()
        assert.truthy(ptx:find("mbarrier.arrive.shared::cta.b64", 1, true), h .. " " .. arch)
      end
    end
  end)

  -- A kernel written against the ring before its methods were renamed (producer_commit_cp_async
  -- is producer_commit, producer_expect is producer_expect_bytes) still compiles, to the same
  -- instructions, and NVRTC's log names what replaces each old name (CHANGELOG.md, 0.1.0).
  it("the ring's old method names compile as deprecated aliases, with the warning in the log (sm_90a and sm_80)", function()
    local function ring_kernel(commit, expect)
      return ([[
#include <cuasync/ring.cuh>
extern "C" __global__ void k(const uint4 *in, unsigned *g) {
  __shared__ cuasync::pipeline_ring<8> ring;
  __shared__ __align__(16) uint4 buf[8][32];
  if (threadIdx.x == 0) ring.init(32, 1);
  __syncthreads();
  auto p = cuasync::stage_state<8>::producer_start();
  ring.producer_acquire(p);
  cuasync::cp_async::copy_cg(&buf[p.index][threadIdx.x], in + threadIdx.x);
  ring.COMMIT(p);
#if __CUDA_ARCH__ >= 900
  if (threadIdx.x == 0) ring.EXPECT(p, 16u);
#endif
  auto c = cuasync::stage_state<8>::consumer_start();
  ring.consumer_wait(c); g[threadIdx.x] = buf[c.index][threadIdx.x].x; ring.consumer_release(c);
}
]]):gsub("COMMIT", commit):gsub("EXPECT", expect)
    end
    for _, arch in ipairs({ "sm_90a", "sm_80" }) do
      local old = cuasync.program{ source = ring_kernel("producer_commit_cp_async", "producer_expect"), arch = arch }
      local new = cuasync.program{ source = ring_kernel("producer_commit", "producer_expect_bytes"), arch = arch }
      local ptx, log = old:ptx(), old:log()
      assert.truthy(ptx:find("cp.async.mbarrier.arrive.noinc.shared::cta.b64", 1, true), arch)
      assert.equal(new:ptx(), ptx, arch .. ": the alias emits what the new name does")
      assert.truthy(log:find('"cuasync::pipeline_ring<Stages>::producer_commit_cp_async [with Stages=8]" was declared deprecated ("cuasync 0.1.0: pipeline_ring::producer_commit_cp_async is now producer_commit', 1, true), log)
      assert.equal(arch == "sm_90a", log:find("producer_expect(st, tx_bytes) is now producer_expect_bytes", 1, true) ~= nil, log)
      local quiet = new:log() or ""   -- (an empty log reads back from the disk cache as nil)
      assert.is_nil(quiet:find("deprecated", 1, true), quiet)
    end
  end)

  -- pipeline_cp_async.cuh: the cp.async completion kinds pipeline<Config> derives from. They are
  -- Ampere's (cp.async, mbarrier waits through test_wait): no refusal below sm_90, so sm_80 too.
  local CP_KERNEL = [[
#include <cuasync/pipeline.cuh>
#include <cuasync/pipelines/cp.cuh>
typedef cuasync::pipelines::cp Plan;
extern "C" __global__ void k(const uint4 *in, unsigned *g) {
  cuasync::pipeline<Plan> pipe;
  pipe.init();
  auto p = pipe.producer_start();
  auto c = pipe.consumer_start();
  if (pipe.is_producer_thread()) { pipe.producer_acquire(p); pipe.producer_copy(p, Plan::x, in); pipe.producer_commit(p); }
  pipe.consumer_wait(c); g[threadIdx.x] = pipe.buffer(c, Plan::x)[threadIdx.x]; pipe.consumer_release(c);
}
]]
  local function cp_plan(completion)
    return cuasync.pipeline{ name = "cp", stages = 2, completion = completion, producer = "all", consumer = { warps = 2 },
                             loads = { { cp_async = 1024, vector = 16, name = "x" } } }
  end

  it("pipeline_cp_async.cuh stands alone, and pipeline.cuh brings both cp.async completions (sm_90a and sm_80)", function()
    for _, arch in ipairs({ "sm_90a", "sm_80" }) do
      local src = '#include <cuasync/pipeline_cp_async.cuh>\nextern "C" __global__ void k() {}\n'
      assert.is_true(#cuasync.program{ source = src, arch = arch }:cubin() > 0, "alone, " .. arch)
    end
    for completion, want in pairs({ mbarrier = { "cp.async.mbarrier.arrive.noinc.shared::cta.b64" },
                                    group = { "cp.async.commit_group", "cp.async.wait_group 1", "mbarrier.arrive.shared::cta.b64" } }) do
      for _, arch in ipairs({ "sm_90a", "sm_80" }) do
        local ptx = cp_plan(completion):program{ source = CP_KERNEL, arch = arch }:ptx()
        for _, ins in ipairs({ "cp.async.cg.shared.global", unpack(want) }) do
          assert.truthy(ptx:find(ins, 1, true), ("%s %s: PTX lacks %s"):format(completion, arch, ins))
        end
      end
    end
  end)

  it("a plan's pipeline refuses the other completion's members by name", function()
    local map = cuasync.tensormap{ ptr = 2 ^ 20, bytes = 2 ^ 24, encode = false, dtype = "f32", dims = { 1024, 1024 }, box = { 64, 16 } }
    local tma = cuasync.pipeline{ name = "cp", stages = 2, loads = { { map = map, name = "x" } }, producer = { warps = 1 }, consumer = { warps = 2 } }
    for _, case in ipairs({
      { tma, "pipe.producer_commit(p)", "cuasync: producer_commit is for cp.async plans; a TMA plan arms full with producer_expect" },
      { tma, "pipe.producer_copy(p, Plan::x, in)", "cuasync: producer_copy is for cp.async plans; a TMA plan issues tma::load on full_barrier(st)" },
      { cp_plan("mbarrier"), "pipe.producer_expect(p)", "cuasync: producer_expect is for TMA/bulk plans; a cp.async plan ends a stage's copies with producer_commit" },
    }) do
      local src = CP_KERNEL:gsub("pipe%.producer_commit%(p%);", case[2] .. ";")
      local ok, err = pcall(function() return case[1]:program{ source = src, arch = "sm_90a", watchdog = false }:ptx() end)
      assert.is_false(ok, case[2])
      assert.truthy(tostring(err):find(case[3], 1, true), tostring(err))
    end
  end)

  it("a bulk reduction PTX does not have fails to compile", function()
    local src = '#include <cuasync/bulk.cuh>\nextern "C" __global__ void k(long long *g) { __shared__ long long s[4]; cuasync::bulk::reduce_add(g, s, 16); }\n'
    local err = compile_error(src, "sm_90a")
    assert.truthy(err:find("reduce_add", 1, true), err)
  end)

  it("epilogue.cuh stages a chunk in pairs through the swizzle or one element at a time, f32 and bf16", function()
    local body = [[
extern "C" __global__ void k(const float *g, float *o) {
  __shared__ __align__(1024) float f[64 * 32];
  __shared__ __align__(1024) __nv_bfloat16 h[64 * 32];
  float acc[32];
  for (int i = 0; i < 32; ++i) acc[i] = g[i * 128 + threadIdx.x];
  cuasync::epilogue::stage_chunk<32, true>(f, acc, 1, threadIdx.x);    // 128B span: 8 f32 pairs
  cuasync::epilogue::stage_chunk<32, false>(h, acc, 0, threadIdx.x);   // plain: 16 bf16 stores
  cuasync::epilogue::stage_chunk<32, true>(h, acc, 0, threadIdx.x);    // 64B span: 8 bf16 pairs
  __syncthreads();
  o[threadIdx.x] = f[threadIdx.x] + (float)h[threadIdx.x];
}
]]
    local ptx = cuasync.program{ source = "#include <cuda_bf16.h>\n#include <cuasync/epilogue.cuh>\n" .. body, arch = "sm_90a" }:ptx()
    local counts = {}
    for _, ins in ipairs({ "st%.shared%.v2%.f32", "st%.shared%.u16", "st%.shared%.u32", "st%.shared%.f32" }) do
      counts[#counts + 1] = select(2, ptx:gsub(ins, ""))
    end
    assert.same({ 8, 16, 8, 0 }, counts)
    -- bf16 overloads come with <cuda_bf16.h> included first; after it, the rule by name
    local err = compile_error("#include <cuasync/epilogue.cuh>\n#include <cuda_bf16.h>\n" .. body, "sm_90a")
    assert.truthy(err:find("for bf16, include <cuda_bf16.h> before <cuasync/epilogue.cuh>", 1, true), err)
  end)

  it("cp.async.ca sizes other than 4, 8, 16 fail with the rule", function()
    local src = '#include <cuasync/cp_async.cuh>\nextern "C" __global__ void k(unsigned *g) { __shared__ unsigned s[4]; cuasync::cp_async::copy_ca<2>(s, g); }\n'
    local err = compile_error(src, "sm_90a")
    assert.truthy(err:find("cuasync: cp.async.ca copies 4, 8 or 16 bytes", 1, true), err)
  end)
end)
