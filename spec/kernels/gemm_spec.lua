-- The GEMM flagship's parts. CPU: wgmma.cuh emits the PTX it claims and refuses a target without
-- the `a` suffix by name; the descriptor encoding matches hand-worked values for each swizzle; the
-- 128B swizzle layout the descriptors describe is the one cuasync.swizzle models for TMA; every
-- variant of the sweep compiles for sm_90a, and so does every rung of examples/gemm_ablation.lua
-- (its ablate defines: the release forms, the A leader, the trace), each with the instructions
-- that tell it apart. GPU: the device encodes the descriptors as the Lua
-- twin; the reference GEMM matches a CPU GEMM; gemm_tma.cu matches the reference for shapes that
-- are not multiples of the tile (edge tiles through the loads' zero fill and the clipped stores),
-- on fresh random data into poisoned output; cuBLAS matches the reference.
local ffi = require("ffi")
local bit = require("bit")
local cuasync = require("cuasync")
local H = require("helper")
local gemm = require("cuasync.kernels.gemm")

describe("gemm", function()
  local gpu_it = H.gpu_it(it, pending)

  it("wgmma.cuh emits the PTX it claims, and refuses sm_90 (no a suffix) by name", function()
    local src = [[
      #include <cuasync/wgmma.cuh>
      extern "C" __global__ void k(float *o) {
        __shared__ __align__(1024) unsigned short a[64 * 64], b[256 * 64];
        float d64[32], d128[64], d256[128];
        namespace wg = cuasync::wgmma;
        auto da = wg::desc_kmajor(a, 128), db = wg::desc_kmajor(b, 128);
        wg::setmaxnreg_dec<40>(); wg::setmaxnreg_inc<232>();
        wg::fence();
        wg::mma_m64n64k16_bf16(d64, da, db, false); wg::mma_m64n128k16_bf16(d128, da, db, true);
        wg::mma_m64n256k16_bf16(d256, wg::desc_advance(da, 32), db, false);
        wg::commit_group(); wg::wait_group<1>(); wg::wait_group<0>();
        o[threadIdx.x] = d64[0] + d128[63] + d256[127];
      }]]
    local ptx = cuasync.program{ source = src, arch = "sm_90a" }:ptx()
    for _, ins in ipairs({ "wgmma.fence.sync.aligned", "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16",
                           "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16",
                           "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16", "wgmma.commit_group.sync.aligned",
                           "wgmma.wait_group.sync.aligned 1", "wgmma.wait_group.sync.aligned 0",
                           "setmaxnreg.dec.sync.aligned.u32 40", "setmaxnreg.inc.sync.aligned.u32 232" }) do
      assert.truthy(ptx:find(ins, 1, true), "PTX lacks " .. ins)
    end
    local ok, err = pcall(function() cuasync.program{ source = src, arch = "sm_90" }:ptx() end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("wgmma::fence needs sm_90a", 1, true), tostring(err))
  end)

  it("encodes descriptors as worked out by hand, for each swizzle", function()
    -- a tile at shared 0x400: start 0x400 >> 4 = 0x40; LBO 16 >> 4 = 1 at bit 16; SBO (8 rows of
    -- the span) >> 4 at bit 32; the swizzle code at bit 62
    local function hex(hi, lo) return ("%08x%08x"):format(hi, lo) end
    assert.equal("4000004000010040", hex(gemm.descriptor(0x400, 16, 1024, "128B")))
    assert.equal("8000002000010040", hex(gemm.descriptor(0x400, 16, 512, "64B")))
    assert.equal("c000001000010040", hex(gemm.descriptor(0x400, 16, 256, "32B")))
    assert.equal("0000008000080123", hex(gemm.descriptor(0x1230, 128, 2048, "none")))
    assert.error_matches(function() gemm.descriptor(0, 0, 0, "16B") end, "swizzle must be none, 128B, 64B or 32B")
  end)

  it("describes the layout TMA's 128B swizzle writes (cuasync.swizzle) as wgmma's K-major SW128", function()
    -- wgmma's canonical K-major 128B-swizzled layout for bf16: row r (M or N) at r * 128 bytes,
    -- its 16-byte chunk c at (c XOR r % 8); 8-row groups 1024 bytes apart (the descriptor's SBO)
    local L = cuasync.swizzle.layout("128B", { 64, 16 }, 2)
    for r = 0, 15 do
      for kcol = 0, 63 do
        local chunk = math.floor(kcol * 2 / 16)
        local want = r * 128 + bit.bxor(chunk, r % 8) * 16 + (kcol * 2) % 16
        assert.equal(want, L:offset(kcol, r), ("row %d col %d"):format(r, kcol))
      end
    end
  end)

  it("compiles every variant of the sweep that fits for sm_90a", function()
    local n = 0
    for _, t in ipairs(gemm.TILES) do
      local bm, bn = gemm.tile(t)
      for stages = 2, 7 do
        local P = gemm.plan{ stages = stages, bm = bm, bn = bn, m = 1000, n = 1000, k = 1000 }
        if pcall(P.check, P, gemm.limits()) then
          local ptx = gemm.program(P, { arch = "sm_90a" }):ptx()
          assert.truthy(ptx:find(("wgmma.mma_async.sync.aligned.m64n%dk16.f32.bf16.bf16"):format(bn), 1, true), t)
          assert.truthy(ptx:find("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes", 1, true))
          -- the epilogue stages C in pairs through the map's 128B swizzle (tma.cuh's swizzled): 8-byte
          -- stores (BN / 4 in the PTX of a 64-row half), none of one f32
          local _, pairs_ = ptx:gsub("st%.shared%.v2%.f32", "")
          assert.equal(bn / 4, pairs_, t)
          assert.falsy(ptx:find("st.shared.f32", 1, true), t)
          n = n + 1
        end
      end
    end
    assert.equal(5 + 3 + 3, n)   -- with the epilogue's scratch: 128x128 fits 2..6 stages, the 48 KiB ones 2..4
    -- the ablation of the swizzle (examples/gemm_ablation.lua's c1_plain_c): one f32 at a time, unswizzled
    local plain = gemm.program(gemm.plan{ stages = 4, bm = 128, bn = 256, m = 1000, n = 1000, k = 1000, ablate = { plain_c = true } },
      { arch = "sm_90a" }):ptx()
    assert.falsy(plain:find("st.shared.v2.f32", 1, true))
    local _, singles = plain:gsub("st%.shared%.f32", "")
    assert.equal(128, singles)
    assert.error_matches(function() gemm.tile("100x128") end, 'tile must be "BMxBN"')
    assert.error_matches(function() gemm.plan{ stages = 2, bm = 128, bn = 128, m = 64, n = 64, k = 100 } end,
      "k = 100 must be a multiple of 8")
    assert.error_matches(function() gemm.plan{ stages = 2, bm = 128, bn = 128, m = 64, n = 66, k = 64 } end,
      'epilogue "tma" needs n a multiple of 4')
    assert.error_matches(function() gemm.plan{ stages = 2, bm = 128, bn = 128, m = 64, n = 64, k = 64, cluster = 4 } end,
      "cluster must be 1 or 2")
    -- a misspelt option is refused, not built as the default
    assert.error_matches(function() gemm.plan{ stages = 2, bm = 128, bn = 128, m = 64, n = 64, k = 64, schedul = "pingpong" } end,
      "unknown field 'schedul' in plan options", nil, true)
    -- the TMA epilogue's chunk buffers: 1 or 2, and only there
    local base = { stages = 2, bm = 128, bn = 128, m = 64, n = 64, k = 64 }
    local function with(t) local q = {} for key, v in pairs(base) do q[key] = v end for key, v in pairs(t) do q[key] = v end return q end
    assert.error_matches(function() gemm.plan(with{ store_buffers = 3 }) end, "store_buffers must be 1 or 2 (got 3)", nil, true)
    assert.error_matches(function() gemm.plan(with{ store_buffers = 2, epilogue = "direct" }) end,
      'store_buffers = 2 is the cooperative schedule\'s TMA epilogue (got epilogue = "direct", schedule = "cooperative")', nil, true)
    assert.equal(2 * gemm.plan(with{}).scratch_bytes, gemm.plan(with{ store_buffers = 2 }).scratch_bytes)
    -- A's and B's L2 promotion: the maps carry it (none unless told), a value the map has not is refused by name
    local P0, P2 = gemm.plan(with{}), gemm.plan(with{ l2_promotion = "256B" })
    assert.equal("none", P0.loads[1].map.l2_promotion)
    assert.equal("256B", P2.loads[1].map.l2_promotion)
    assert.equal("256B", P2.loads[2].map.l2_promotion)
    assert.equal("256B", P2.l2_promotion)
    assert.equal("128B", gemm.plan(with{ l2_promotion = "128B", schedule = "pingpong" }).loads[2].map.l2_promotion)
    assert.error_matches(function() gemm.plan(with{ l2_promotion = "512B" }) end,
      'l2_promotion must be "none", "64B", "128B" or "256B" (the L2 sector promotion of A\'s and B\'s loads; got "512B")', nil, true)
    -- C's map (plan-only, no buffer): a chunk row is one swizzle span, as epilogue.cuh stages it;
    -- unswizzled with the plain_c ablation; the direct epilogue's a 1D map, never stored through
    local function cmap(t) return gemm.c_map(gemm.plan(with(t))) end
    local f32, bf16, plain = cmap{}, cmap{ out = "bf16" }, cmap{ ablate = { plain_c = true } }
    assert.same({ "128B", "64B", "none" }, { f32.swizzle, bf16.swizzle, plain.swizzle })
    assert.same({ 64, 64 }, f32.dims)
    assert.same({ false, false }, { f32.encoded, f32.load_only })
    local direct = cmap{ epilogue = "direct" }
    assert.same({ 1, { 64 * 64 }, "none", true }, { direct.rank, direct.dims, direct.swizzle, direct.load_only })
  end)

  -- The rungs exactly as examples/gemm_ablation.lua builds them: its RUNGS block (plain tables and
  -- loops) is loaded from the file, since loading the example runs its sweep.
  local function ablation_rungs()
    local src = H.read("examples/gemm_ablation.lua")
    local block = src:match("\n(local RUNGS = {.-)\nlocal o = cli%.script")
    assert(block, "examples/gemm_ablation.lua: no RUNGS block before `local o = cli.script` (gemm_spec loads it)")
    return assert(load(block .. "\nreturn RUNGS", "=gemm_ablation RUNGS"))()
  end

  it("compiles every rung of examples/gemm_ablation.lua for sm_90a, each with the instructions that tell it apart", function()
    local function count(s, ins) local _, n = s:gsub(H.literal(ins), "") return n end
    local REL_CLUSTER = "mbarrier.arrive.release.cluster.shared::cluster.b64"   -- ablate.release_cluster (gemm_tma.cu)
    local REL_CTA = "mbarrier.arrive.release.cta.shared::cluster.b64"           -- pipeline.cuh's release_cta
    local MULTICAST = "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
    local rungs, ptx, names = ablation_rungs(), {}, {}
    for name in pairs(rungs) do names[#names + 1] = name end
    table.sort(names)
    names[#names + 1] = "c2_wg+trace"   -- what the example's trace launches add to a rung
    rungs["c2_wg+trace"] = setmetatable({ ablate = { trace = true } }, { __index = rungs.c2_wg })
    for _, name in ipairs(names) do
      local r = rungs[name]
      -- the example's opts(p) at a small shape, with its first tile
      -- (k long enough that the k loop stays a loop: the scheduler's header makes the shape a constant)
      local q = { stages = 4, tile = "128x256", m = 256, n = 256, k = 4096, epilogue = "tma", raster = 1 }
      for _, key in ipairs({ "cluster", "multicast", "release", "ablate", "watchdog" }) do q[key] = r[key] end
      local prog = gemm.program(q, { arch = "sm_90a", watchdog = q.watchdog })
      local p = prog:ptx()
      assert.is_true(#prog:cubin() > 0, name)
      ptx[name] = p
      local function has(ins, yes) assert[yes and "truthy" or "falsy"](p:find(ins, 1, true), ("%s: %s %s"):format(name, yes and "lacks" or "has", ins)) end
      has("wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16", true)
      has("%globaltimer", r.watchdog ~= false or (r.ablate or {}).trace == true)   -- the watchdog's clock (the trace's too)
      has("barrier.cluster.arrive", r.cluster == 2)
      local shared = r.cluster == 2 and r.multicast ~= false   -- A multicast: peers release each other's stages
      has(MULTICAST, shared)
      has(REL_CLUSTER, shared and (r.ablate or {}).release_cluster == true)
      has(REL_CTA, shared and not (r.ablate or {}).release_cluster)
      has("mbarrier.arrive.shared::cta.b64", not shared)   -- no peers: the local release
      has("gemm_trace", (r.ablate or {}).trace == true)
      has("prefetch.tensormap", (r.ablate or {}).prefetch_maps == true)
    end
    assert.truthy(#names >= 19, tostring(#names))   -- 6 rungs, 3 at cluster scope, 9 without the watchdog, the trace
    -- serial release: lane 0 arrives on each peer in turn, where release = "warp" has each lane arrive once
    assert.truthy(count(ptx.c2_serial, REL_CTA) > count(ptx.c2_warp, REL_CTA), "c2_serial vs c2_warp")
    assert.truthy(count(ptx.c2_serial_cl, REL_CLUSTER) > count(ptx.c2_warp_cl, REL_CLUSTER), "c2_serial_cl vs c2_warp_cl")
    assert.truthy(ptx.c2_wg ~= ptx.c2_warp, "release = warpgroup and warp build the same PTX")
    -- the A leader issues both slices of A: more multicast loads than one slice per rank
    assert.truthy(count(ptx.c2_wg_leader, MULTICAST) > count(ptx.c2_wg, MULTICAST), "c2_wg_leader vs c2_wg")
  end)

  gpu_it("encodes descriptors on the device as the Lua twin", function()
    local cases = { { 0x400, 16, 1024, 1 }, { 0x400, 16, 512, 2 }, { 0x400, 16, 256, 3 }, { 0x1230, 128, 2048, 0 },
                    { 0x3FFF0, 0x3FFF0, 0x3FFF0, 1 } }
    local fields = ffi.new("uint32_t[?]", 4 * #cases)
    for i, c in ipairs(cases) do for j = 1, 4 do fields[4 * (i - 1) + j - 1] = c[j] end end
    local f, out, addr = cuasync.alloc(16 * #cases), cuasync.alloc(8 * (#cases + 4)), cuasync.alloc(4)
    f:upload(fields, 16 * #cases)
    local k = cuasync.program{ file = "spec/support/kernels/wgmma_desc.cu" }:compile():kernel("descriptors", "ptr, u32, ptr, ptr")
    k:launch({ grid = 1, block = 1 }, f, #cases, out, addr)
    cuasync.synchronize()
    local got = out:download("uint64_t", #cases + 4)
    local names = { [0] = "none", "128B", "64B", "32B" }
    local function want(a, l, s, sw) local hi, lo = gemm.descriptor(a, l, s, sw) return ffi.new("uint64_t", hi) * 2 ^ 32 + lo end
    for i, c in ipairs(cases) do
      assert.equal(want(c[1], c[2], c[3], names[c[4]]), got[i - 1], ("case %d"):format(i))
    end
    local a = addr:download("uint32_t", 1)[0]
    assert.equal(want(a, 16, 1024, "128B"), got[#cases])
    assert.equal(want(a, 16, 512, "64B"), got[#cases + 1])
    assert.equal(want(a, 16, 256, "32B"), got[#cases + 2])
    assert.equal(want(a + 96, 16, 1024, "128B"), got[#cases + 3])
    f:close(); out:close(); addr:close()
  end)

  gpu_it("the reference matches a CPU GEMM on fresh random data", function()
    local m, n, k = 37, 45, 72
    local A, B, C = cuasync.alloc(m * k * 2), cuasync.alloc(n * k * 2), cuasync.alloc(m * n * 4)
    gemm.random(A, m * k, H.random_u32())
    gemm.random(B, n * k, H.random_u32())
    C:fill(0xFF)
    gemm.reference(A, B, C, m, n, k)
    cuasync.synchronize()
    local a, b, c = A:download("uint16_t", m * k), B:download("uint16_t", n * k), C:download("float", m * n)
    -- bf16 bits to a number by arithmetic: reading the bits back through a float * cast of a
    -- uint32_t buffer is type punning, which LuaJIT's JIT may reorder (its alias analysis keeps
    -- different FFI types apart), so the result depended on how the loop was traced
    local function f(x)
      local e, m = math.floor(x / 128) % 256, x % 128
      local v = e == 0 and m * 2 ^ -133 or (1 + m / 128) * 2 ^ (e - 127)
      return x >= 0x8000 and -v or v
    end
    local worst = 0
    for i = 0, m - 1 do
      for j = 0, n - 1 do
        local s = 0
        for q = 0, k - 1 do s = s + f(a[i * k + q]) * f(b[j * k + q]) end
        worst = math.max(worst, math.abs(s - c[i * n + j]))
      end
    end
    assert.truthy(worst < 1e-4, ("the reference differs from the CPU by %g"):format(worst))
    A:close(); B:close(); C:close()
  end)

  gpu_it("gemm_tma matches the reference on edge shapes, every tile; cuBLAS does too", function()
    local dev = cuasync.device(0)
    local lines = {}
    for _, shape in ipairs({ { 300, 200, 136 }, { 130, 257, 72 }, { 64, 64, 8 }, { 513, 129, 1000 }, { 700, 1000, 264 } }) do
      local m, n, k = shape[1], shape[2], shape[3]
      local A, B, C, R = cuasync.alloc(m * k * 2), cuasync.alloc(n * k * 2), cuasync.alloc(m * n * 4), cuasync.alloc(m * n * 4)
      gemm.random(A, m * k, H.random_u32())
      gemm.random(B, n * k, H.random_u32())
      gemm.reference(A, B, R, m, n, k)
      for _, t in ipairs(gemm.TILES) do
        for _, cl in ipairs({ 1, 2 }) do
          -- the TMA epilogue where its store map can be (n a multiple of 4), the direct one always
          -- (tma2: the TMA epilogue with two chunk buffers a warpgroup, store_buffers = 2)
          for _, ep in ipairs(n % 4 == 0 and { "tma", "tma2", "direct" } or { "direct" }) do
            local bm, bn = gemm.tile(t)
            -- rasters of 1..3 tile rows and both release forms, in turn
            local raster, release = 1 + #lines % 3, (#lines % 2 == 0) and "warp" or "warpgroup"
            local P = gemm.plan{ stages = 3, bm = bm, bn = bn, m = m, n = n, k = k, a = A, b = B, cluster = cl,
                                 epilogue = ep == "tma2" and "tma" or ep, store_buffers = ep == "tma2" and 2 or nil,
                                 raster = raster, release = release }
            C:fill(0xFF)   -- NaN: an element the kernel misses cannot pass
            local kern = gemm.kernel(P)
            local work, flags = gemm.workspace(P)
            kern:launch(gemm.launch_config(P, dev, m, n, kern), gemm.args(P, C, work, flags))
            cuasync.synchronize()
            local bad, worst = gemm.compare(C, R, m * n, 1e-3, 1e-4)
            lines[#lines + 1] = ("%dx%dx%d %s cluster %d epilogue %s raster %d release %s: %d bad, largest difference %g"):format(
              m, n, k, t, cl, ep, raster, release, bad, worst)
            assert.equal(0, bad, lines[#lines])
          end
        end
      end
      C:fill(0xFF)
      gemm.cublas(A, B, C, m, n, k)
      cuasync.synchronize()
      local bad, worst = gemm.compare(C, R, m * n, 1e-3, 1e-4)
      assert.equal(0, bad, ("cuBLAS %dx%dx%d: %d bad, largest difference %g"):format(m, n, k, bad, worst))
      A:close(); B:close(); C:close(); R:close()
    end
    print("\n" .. table.concat(lines, "\n"))
  end)
end)
