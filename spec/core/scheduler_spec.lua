-- cuasync.scheduler: the object (fields, derived numbers, refusals named before any compile, the
-- plan error kind), its generated header and the device walk (scheduler.cuh, compiled by the
-- host's C++ compiler here and run against the Lua walk unit for unit, on every kind), the
-- turnstile (its slots, its epoch tags, the role a hang names) and the toy kernel compiled by NVRTC
-- in its block, group and traced forms; stale flags after an abort in the CPU model; the note on a
-- grid larger than the device. The GPU runs are spec/core/scheduler_gpu_spec.lua's.
local ffi = require("ffi")
local cuasync = require("cuasync")
local errors = require("cuasync.errors")
local H = require("helper")

-- A plan refusal's text (an error object: errors.message drops the position).
local function refusal(fn, text)
  local ok, e = pcall(fn)
  assert.is_false(ok)
  assert.equal("plan", errors.kind(e), tostring(e))
  assert.equal(text, errors.message(e))
end

local toy_sched = require("support.sched_toy")
local sched, KINDS = toy_sched.sched, toy_sched.KINDS

describe("cuasync.scheduler", function()

  it("derives the grid, the tiles and the turnstile's memory", function()
    local S = sched{ kind = "stream_k" }
    assert.same({ 35, 7, 5, 38, 11, 13, 22, 1 }, { S.tiles, S.tiles_m, S.tiles_n, S.k_tiles, S.ctas, S.sk_tiles, S.dp_tiles, S.cluster })
    -- a flag and an f32 partial for each of the 13 stream-K tiles only, at slot tile - 22
    assert.same({ 13, 13 * 4, 13 * 16 * 16 * 4 }, { S.slots, S.flag_bytes, S.workspace_bytes })
    for c = 0, S.ctas - 1 do
      for _, u in ipairs(S:units(c)) do assert.equal(u.tile >= 22 and u.tile - 22 or nil, u.slot) end
    end
    local Q = sched{ kind = "split_k", splits = 3 }
    assert.same({ 35, 35 * 4, 35 * 16 * 16 * 4, 1 }, { Q.slots, Q.flag_bytes, Q.workspace_bytes, Q:units(4)[1].slot })
    local R = sched{ kind = "split_k", splits = 4, mode = "reduce", sms = 12 }
    assert.same({ 12, 4, 0, 0 }, { R.ctas, R.cluster, R.flag_bytes, R.workspace_bytes })
    assert.same({ grid = { 12, 1, 1 }, cluster = { 4, 1, 1 }, block = { 256, 1, 1 } }, R:launch_config{ block = { 256, 1, 1 } })
    -- stacked on a pipeline plan's launch config: its grid and cluster kept where they are the scheduler's
    assert.same({ grid = { 12, 1, 1 }, cluster = { 4, 1, 1 }, block = { 384, 1, 1 }, smem = 1024 },
                R:launch_config{ grid = { 12, 1, 1 }, cluster = { 4, 1, 1 }, block = { 384, 1, 1 }, smem = 1024 })
    assert.same({ grid = { 11, 1, 1 }, block = { 256, 1, 1 } }, S:launch_config{ grid = 11, cluster = { 1, 1, 1 }, block = { 256, 1, 1 } })
    local u = S:units(1)
    assert.same({ 1, 12, 24, 23 }, { u[1].tile, u[2].tile, u[3].tile, u[4].tile })
    assert.truthy(S:explain():find("22 tiles whole, the last 13 cut into 494 k-iterations", 1, true), S:explain())
    assert.equal(S, S:verify())
    assert.same({ 121, 120 }, { S:balance().max, S:balance().min })
    local D = sched{ kind = "persistent", sms = { sms = 5, name = "a table with sms" } }
    assert.equal(5, D.ctas)
  end)

  it("refuses, naming the call, the argument and the rule, before any compile (a plan error)", function()
    local function refused(o, text)
      local ok, e = pcall(sched, o)
      assert.is_false(ok)
      assert.equal("plan", errors.kind(e), tostring(e))
      assert.equal("cuasync.scheduler: " .. text, errors.message(e))
    end
    refused({ kind = "split_k", splits = 39, sms = 100 }, "splits = 39 is more than the 38 k-tiles (k = 300 in steps of bk = 8): a split would get no k-iteration")
    refused({ kind = "stream_k", sms = 7 }, '35 tiles fill the 7 SMs evenly (5 waves): stream-K has no partial wave to spread (kind = "persistent")')
    refused({ kind = "persistent", raster = 0 }, "raster = 0 must be in 1..7 (the tile rows: m = 100 in tiles of 16)")
    refused({ kind = "persistent", raster = 9 }, "raster = 9 must be in 1..7 (the tile rows: m = 100 in tiles of 16)")
    refused({ kind = "persistent", tile = { 128, 16 } }, "tile {128, 16} is larger than the shape 100 x 70: the tile must fit in the output (a smaller tile)")
    refused({ kind = "split_k", splits = 9, mode = "reduce", sms = 100 }, 'mode = "reduce" puts the 9 splits of a tile in one cluster; a portable cluster has at most 8 blocks (mode = "serial")')
    refused({ kind = "split_k", splits = 1 }, "splits must be an integer in 2..1048576 (got 1)")
    refused({ kind = "split_k", splits = 2, mode = "tree" }, 'mode must be "serial" or "reduce" (got "tree")')
    refused({ kind = "persistent", splits = 2 }, 'splits is for kind = "split_k" (kind is "persistent")')
    refused({ kind = "stream-k" }, 'kind must be "persistent", "stream_k" or "split_k" (got "stream-k")')
    refused({ kind = "persistent", tile = { 16 } }, "tile must be { bm, bn } (got 1 entry)")
    refused({ kind = "persistent", tile = { 16, 16, 16 } }, "tile must be { bm, bn } (got 3 entries)")
    refused({ kind = "stream_k", k = 2 ^ 20, bk = 1 },
      "1048576 k-tiles (k = 1048576 in steps of bk = 1) do not fit the turnstile flag's 20-bit count (at most 1048575: a larger bk)")
    refused({ kind = "persistent", sms = 0 }, "sms must be an integer in 1..4096 (got 0)")
    refused({ kind = "persistent", name = "class" }, 'name must be a C identifier of at most 64 characters, not a C++ keyword (it names the generated struct; got "class")')
    local ok, e = pcall(sched, { kind = "persistent", tiles = 3 })
    assert.is_false(ok)
    assert.truthy(tostring(e):find("unknown field 'tiles'", 1, true), tostring(e))
    local S = sched{ kind = "stream_k" }
    refusal(function() S:launch_config{ grid = 3 } end,
      "cuasync.scheduler.launch_config: grid = 3 is not the scheduler's ({ 11, 1, 1 }: sched.ctas): leave grid out, and the scheduler fills it")
    refusal(function() S:launch_config{ grid = 11, cluster = { 2, 1, 1 } } end,
      "cuasync.scheduler.launch_config: cluster = { 2, 1, 1 } is not the scheduler's (no cluster): leave cluster out, and the scheduler fills it")
    refusal(function() sched{ kind = "persistent" }:mutate{ after_abort = true } end,
      "cuasync.scheduler.mutate: wait_delta, relaxed, after_abort and no_epoch are faults of a turnstile; scheduler 'toy' has none (persistent)")
    refusal(function() S:mutate{ skip_second_sync = true } end,
      "cuasync.scheduler.mutate: skip_second_sync is a fault of mode = \"reduce\"; scheduler 'toy' is stream_k")
    refusal(function() S:mutate{} end,
      "cuasync.scheduler.mutate: name a mutation: skip_signal, early_read, wait_delta, relaxed, skip_second_sync, after_abort or no_epoch")
    refusal(function() S:mutate{ skip_signal = 11 }:simulate() end, "cuasync.scheduler.mutate: skip_signal must be an integer in 0..10 (got 11)")
    refusal(function() S.units(3) end, "cuasync.scheduler.units: call it as sched:units(...), with a colon (self was 3)")
  end)

  it("simulates its handshakes, and finds planted faults through sched:mutate", function()
    for _, o in ipairs(KINDS) do
      local S = sched(o)
      assert.is_true(S:simulate{ runs = 10 }.ok, o.kind)
    end
    local S = sched{ kind = "split_k", splits = 3, mode = "serial" }
    local r = S:mutate{ skip_signal = 0 }:simulate()
    assert.same({ false, "deadlock" }, { r.ok, r.kind })
    assert.truthy(tostring(S:mutate{ relaxed = true }):find("(mutated)", 1, true))
    refusal(function() S:mutate{ relaxed = true }:program{ file = "sched_sum.cu" } end,
      "cuasync.scheduler: scheduler 'toy' is a mutated one: it is for :simulate only")
    -- a launch after an aborted one: its flags carry the old epoch and are never taken; without
    -- epochs (the count alone) a waiter takes the old flag and reads the old launch's partial
    for _, o in ipairs({ KINDS[2], KINDS[3] }) do
      local T = sched(o)
      assert.is_true(T:mutate{ after_abort = true }:simulate{ runs = 30 }.ok, o.kind)
      local bad = T:mutate{ after_abort = true, no_epoch = true }:simulate{ runs = 30 }
      assert.is_false(bad.ok, o.kind)
      -- the old partial read as this launch's, or the old flag stored over this launch's count
      assert.truthy(bad.kind == "stale" and bad.message:find("read the partial as {garbage}", 1, true) or bad.kind == "deadlock", bad:report())
    end
  end)

  it("gives each launch an epoch, 1..4095 and round again, that the flags carry (epoch << 20 | count)", function()
    local T = require("cuasync.model.tile_scheduler")
    local S = sched{ kind = "stream_k" }
    assert.same({ 1, 2, 3 }, { S:next_epoch(), S:next_epoch(), S:next_epoch() })
    S.epoch = 4094
    assert.same({ 4095, 1 }, { S:next_epoch(), S:next_epoch() })
    assert.same({ 3 * 2 ^ 20 + 7, 4095 * 2 ^ 20 + 2 ^ 20 - 1 }, { T.tag(3, 7), T.tag(4095, T.MAX_COUNT) })
    assert.same({ 3, 7 }, { T.untag(T.tag(3, 7)) })
    assert.is_true(T.tag(T.MAX_EPOCH, T.MAX_COUNT) < 2 ^ 32)
    -- turnstile.cuh's tag, compiled for the host, agrees
    local dir = H.tmpdir()
    H.write(dir .. "/tag.cpp", table.concat({ "#define __device__", "#define __forceinline__ inline", "#include <cstdio>",
      "namespace cuasync { namespace turnstile {", H.read("kernels-src/cuasync/turnstile.cuh"):match("(constexpr unsigned COUNT_BITS.-\n}\n)"),
      "} }", 'int main() { std::printf("%u %u\\n", cuasync::turnstile::tag(3u, 7u), cuasync::turnstile::tag(4095u, 1048575u)); }' }, "\n"))
    local out, rc = H.sh(("c++ -std=c++11 -Wall -Werror -o %s/tag %s/tag.cpp 2>&1 && %s/tag"):format(dir, dir, dir))
    assert.equal(0, rc, out)
    assert.equal(("%d %d\n"):format(T.tag(3, 7), T.tag(4095, T.MAX_COUNT)), out)
  end)

  it("notes a turnstile grid larger than the device's SMs (its waits, all on lower-index CTAs, need in-order dispatch)", function()
    local T = require("cuasync.model.tile_scheduler")
    local S = sched{ kind = "stream_k", sms = 200, m = 400, n = 70 }
    assert.equal("sms = 200 gives 200 CTAs, more than the 100 SMs of a test device: the grid may not be resident all at once, and each turnstile wait is on a lower-index CTA, so it progresses only if blocks start in index order (as CUDA dispatches them today, without promising it)",
                 T.dispatch_note(S, 100, "a test device"))
    assert.is_nil(T.dispatch_note(S, 200, "a test device"))
    assert.is_nil(T.dispatch_note(sched{ kind = "persistent", sms = 200 }, 8, "a test device"))   -- no waits
    -- the rule itself: move one wait onto a higher-index CTA, and verify names it
    local per = T.all(S)
    local c0, c1 = S.ctas - 2, S.ctas - 1
    per[c0], per[c1] = per[c1], per[c0]
    assert.truthy(table.concat(T.violations(S, per), "\n"):find("not a lower-index CTA's: a grid larger than the device holds at once could hang", 1, true))
  end)

  it("writes its Config header, and the device walk (compiled for the host) takes the Lua walk, unit for unit", function()
    local dir = H.tmpdir()
    local shapes = {}
    for _, o in ipairs(KINDS) do shapes[#shapes + 1] = o end
    shapes[#shapes + 1] = { kind = "stream_k", m = 4096, n = 4096, k = 4096, tile = { 128, 256 }, bk = 64, raster = 8, sms = 132 }
    shapes[#shapes + 1] = { kind = "stream_k", m = 16, n = 16, k = 512, sms = 20 }
    shapes[#shapes + 1] = { kind = "split_k", m = 128, n = 8192, k = 8192, tile = { 128, 128 }, bk = 64, splits = 2, sms = 132 }
    for i, o in ipairs(shapes) do
      local S = sched(o)
      local h = S:header()
      assert.truthy(h:find("struct toy {", 1, true) and h:find(("static constexpr unsigned ctas = %du;"):format(S.ctas), 1, true), h)
      local src = table.concat({
        "#define __device__", "#define __forceinline__ inline", "#include <cstdio>",
        (h:gsub("#include <cuasync/turnstile.cuh>\n", ""):gsub("#pragma once\n", "")),
        "int main() {",
        "  typedef cuasync::schedulers::toy C;",
        "  for (unsigned c = 0; c < C::ctas; ++c) {",
        "    cuasync::scheduler::walk<C> w(c, C::ctas);",
        "    for (cuasync::scheduler::work t; w.next(t);)",
        '      std::printf("%u %u %u %u %u %u %u %u %u %d%d%d\\n", c, t.tile, t.row, t.col, t.m0, t.n0, t.k_begin, t.k_end, t.slot, t.wait, t.publish, t.epilogue);',
        "  }",
        "}" }, "\n")
      H.write(dir .. "/walk.cpp", src)
      local out, rc = H.sh(("c++ -std=c++11 -Wall -Werror -I kernels-src -o %s/walk %s/walk.cpp 2>&1 && %s/walk"):format(dir, dir, dir))
      assert.equal(0, rc, out)
      local want = {}
      for c = 0, S.ctas - 1 do
        for _, u in ipairs(S:units(c)) do
          want[#want + 1] = ("%d %d %d %d %d %d %d %d %d %d%d%d"):format(c, u.tile, u.row, u.col, u.row * S.bm, u.col * S.bn, u.k_begin,
            u.k_end, u.slot or 0xFFFFFFFF, u.wait and 1 or 0, u.publish and 1 or 0, u.epilogue and 1 or 0)
        end
      end
      assert.equal(table.concat(want, "\n") .. "\n", out, ("shape %d"):format(i))
    end
  end)

  it("compiles with NVRTC: the umbrella header, the toy kernel on every kind (block and group forms, traced), the turnstile's PTX", function()
    for _, o in ipairs(KINDS) do
      local S = sched(o)
      for _, v in ipairs({ {}, { defines = { SCHED_SUM_GROUP = 1 } }, { trace = true } }) do
        local prog = S:program{ file = "sched_sum.cu", arch = "sm_90a", defines = v.defines, trace = v.trace }
        local ptx = prog:ptx()
        local what = o.kind .. (v.defines and " (group)" or v.trace and " (traced)" or "")
        assert.truthy(ptx:find(".entry sched_sum", 1, true), what)
        if S.turnstile then
          assert.truthy(ptx:find("ld.acquire.gpu.global.u32", 1, true) and ptx:find("st.relaxed.gpu.global.u32", 1, true)
                        and ptx:find("fence.acq_rel.gpu", 1, true), what)
          -- the group forms sync the consumers on named barrier 1, never the whole block
          if v.defines then
            assert.truthy(ptx:find("bar.sync %r", 1, true), what)
            assert.falsy(ptx:find("bar.sync 0;", 1, true) or ptx:find("barrier.sync 0;", 1, true), what)
          end
        end
        assert.equal(0, prog:resources().sched_sum.spill_stores, what)
      end
    end
    local S = sched{ kind = "stream_k" }
    local umbrella = cuasync.program{ source = '#include <cuasync/cuasync.cuh>\n#include <cuasync/schedulers/toy.cuh>\n' ..
      'extern "C" __global__ void k(unsigned *f, unsigned e) { cuasync::scheduler::walk<cuasync::schedulers::toy> w(blockIdx.x, gridDim.x);' ..
      ' const cuasync::turnstile::group g{ 2u, 128u, threadIdx.x == 0u };' ..
      ' cuasync::scheduler::work t; while (w.next(t)) if (t.wait) { if (threadIdx.x < 128u) cuasync::turnstile::group_wait(f, e, t, g); } }',
      headers = S:headers(), arch = "sm_90a" }
    assert.truthy(umbrella:ptx():find(".entry k", 1, true))
    refusal(function() S:program{ file = "sched_sum.cu", headers = S:headers() } end,
      "cuasync.scheduler.program: headers already has cuasync/schedulers/toy.cuh: the scheduler writes it")
  end)

  it("a kernel of sched:program is refused a grid (or a reduce cluster) other than the one its waits were derived for", function()
    local mod = require("cuasync.scheduler")
    local function launch_refusal(f, text)
      local ok, e = pcall(f)
      assert.is_false(ok)
      assert.truthy(tostring(e):find(text, 1, true), tostring(e))
    end
    local S = cuasync.scheduler{ name = "toy", kind = "stream_k", m = 100, n = 70, k = 300, tile = { 16, 16 }, bk = 8, sms = 11 }
    local function c(grid, cluster) return { grid = { grid, 1, 1 }, block = { 128, 1, 1 }, cluster = cluster and { cluster, 1, 1 } or nil } end
    assert.has_no_error(function() mod.config_check(S, "k", c(S.ctas)) end)
    launch_refusal(function() mod.config_check(S, "k", c(S.ctas + 1)) end,
      ("cuasync.launch: kernel 'k' launches %d blocks but scheduler 'toy' (stream_k) derived its walk and its waits for %d (use sched:launch_config)"):format(S.ctas + 1, S.ctas))
    local R = cuasync.scheduler{ name = "red", kind = "split_k", splits = 2, mode = "reduce", m = 100, n = 70, k = 300, tile = { 16, 16 }, bk = 8, sms = 11 }
    launch_refusal(function() mod.config_check(R, "k", c(R.ctas)) end,
      "cuasync.launch: kernel 'k' launches clusters of 1 blocks but scheduler 'red' reduces 2 splits in a cluster")
    assert.has_no_error(function() mod.config_check(R, "k", c(R.ctas, 2)) end)
    local P = cuasync.scheduler{ name = "per", kind = "persistent", m = 100, n = 70, k = 300, tile = { 16, 16 }, bk = 8, sms = 11 }
    assert.has_no_error(function() mod.config_check(P, "k", c(3)) end)   -- a persistent walk covers every tile on any grid
  end)

  it("a turnstile wait that hangs is named by the watchdog: the tile, the count it waited for and the epoch", function()
    local watchdog = require("cuasync.watchdog")
    local hang = require("cuasync.hang")
    assert.same({ 4, "turnstile" }, { hang.TURNSTILE, hang.ROLES[hang.TURNSTILE] })
    assert.equal("consumer group", hang.ROLES[3])   -- the ordered barrier's (order.cuh), beside the turnstile's
    assert.truthy(H.read("kernels-src/cuasync/turnstile.cuh"):find("constexpr unsigned ROLE = 4u;", 1, true))
    local r = ffi.new("cuasync_watchdog_record")
    r.state, r.block[0], r.warp = 1, 5, 0
    r.bar, r.parity, r.base, r.stage, r.role, r.iteration = 0, 0xFFFFFFFF, 0, 23, hang.TURNSTILE, 3 * 2 ^ 20 + 7
    r.phase_parity, r.received, r.armed = 2, 0xFFFFFFFF, 0xFFFFFFFF
    r.waited_ns, r.timeout_ns = 2000e6, 2000e6
    local e = watchdog.error_from(r, { name = "sched_sum.cu", watch = { last = "sched_sum" }, program = {} }, true)
    assert.equal("cuasync.watchdog: kernel 'sched_sum' hung: block (5,0,0) warp 0 (turnstile) waited 2000 ms on the turnstile flag of tile 23 (waiting for it to count 7 k-tiles in launch epoch 3: the next launch, with its own epoch, ignores the flags this one left)",
                 e.message)
    assert.same({ 23, 7, 3 }, { e.tile, e.awaited, e.epoch })
  end)
end)
