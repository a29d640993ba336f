-- cuasync.scheduler: the object (fields, derived numbers, refusals named before any compile, the
-- plan error kind), its generated header and the device walk (scheduler.cuh, compiled by the
-- host's C++ compiler here and run against the Lua walk unit for unit, on every kind), the
-- turnstile and the toy kernel compiled by NVRTC; on the GPU, kernels-src/sched_sum.cu gives the
-- CPU reference on fresh random data with C poisoned first, for each kind on edge shapes, takes
-- the walk sched:units says, leaves every flag at 0, and adds in the same order twice (bitwise).
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

local function sched(o)
  local s = { name = "toy", m = 100, n = 70, k = 300, tile = { 16, 16 }, bk = 8, sms = 11 }
  for key, v in pairs(o) do s[key] = v end
  return cuasync.scheduler(s)
end

local KINDS = {
  { kind = "persistent", raster = 3 },
  { kind = "stream_k" },
  { kind = "split_k", splits = 3, mode = "serial" },
  { kind = "split_k", splits = 4, mode = "reduce", sms = 12 },
}

describe("cuasync.scheduler", function()
  local gpu_it = H.gpu_it(it, pending)

  it("derives the grid, the tiles and the turnstile's memory", function()
    local S = sched{ kind = "stream_k" }
    assert.same({ 35, 7, 5, 38, 11, 13, 22, 1 }, { S.tiles, S.tiles_m, S.tiles_n, S.k_tiles, S.ctas, S.sk_tiles, S.dp_tiles, S.cluster })
    assert.same({ 35 * 4, 35 * 16 * 16 * 4 }, { S.flag_bytes, S.workspace_bytes })
    local R = sched{ kind = "split_k", splits = 4, mode = "reduce", sms = 12 }
    assert.same({ 12, 4, 0 }, { R.ctas, R.cluster, R.flag_bytes })
    assert.same({ grid = { 12, 1, 1 }, cluster = { 4, 1, 1 }, block = { 256, 1, 1 } }, R:launch_config{ block = { 256, 1, 1 } })
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
    refused({ kind = "persistent", tile = { 16 } }, "tile must be { bm, bn } (got 1 entries)")
    refused({ kind = "persistent", sms = 0 }, "sms must be an integer in 1..4096 (got 0)")
    refused({ kind = "persistent", name = "class" }, 'name must be a C identifier of at most 64 characters, not a C++ keyword (it names the generated struct; got "class")')
    local ok, e = pcall(sched, { kind = "persistent", tiles = 3 })
    assert.is_false(ok)
    assert.truthy(tostring(e):find("unknown field 'tiles'", 1, true), tostring(e))
    local S = sched{ kind = "stream_k" }
    refusal(function() S:launch_config{ grid = 3 } end, "cuasync.scheduler.launch_config: grid is filled by the scheduler (11); do not give it")
    refusal(function() S:mutate{ skip_second_sync = true } end,
      "cuasync.scheduler.mutate: skip_second_sync is a fault of mode = \"reduce\"; scheduler 'toy' is stream_k")
    refusal(function() S:mutate{} end, "cuasync.scheduler.mutate: name a mutation: skip_signal, early_read, wait_delta, relaxed or skip_second_sync")
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
        '      std::printf("%u %u %u %u %u %u %u %u %d%d%d\\n", c, t.tile, t.row, t.col, t.m0, t.n0, t.k_begin, t.k_end, t.wait, t.publish, t.epilogue);',
        "  }",
        "}" }, "\n")
      H.write(dir .. "/walk.cpp", src)
      local out, rc = H.sh(("c++ -std=c++11 -Wall -Werror -I kernels-src -o %s/walk %s/walk.cpp 2>&1 && %s/walk"):format(dir, dir, dir))
      assert.equal(0, rc, out)
      local want = {}
      for c = 0, S.ctas - 1 do
        for _, u in ipairs(S:units(c)) do
          want[#want + 1] = ("%d %d %d %d %d %d %d %d %d%d%d"):format(c, u.tile, u.row, u.col, u.row * S.bm, u.col * S.bn, u.k_begin,
            u.k_end, u.wait and 1 or 0, u.publish and 1 or 0, u.epilogue and 1 or 0)
        end
      end
      assert.equal(table.concat(want, "\n") .. "\n", out, ("shape %d"):format(i))
    end
  end)

  it("compiles with NVRTC: the umbrella header, the toy kernel on every kind, the turnstile's PTX", function()
    for _, o in ipairs(KINDS) do
      local S = sched(o)
      local prog = S:program{ file = "sched_sum.cu", arch = "sm_90a" }
      local ptx = prog:ptx()
      assert.truthy(ptx:find(".entry sched_sum", 1, true), o.kind)
      if S.turnstile then
        assert.truthy(ptx:find("ld.acquire.gpu.global.u32", 1, true) and ptx:find("st.relaxed.gpu.global.u32", 1, true)
                      and ptx:find("fence.acq_rel.gpu", 1, true), o.kind)
      end
      assert.equal(0, prog:resources().sched_sum.spill_stores)
    end
    local S = sched{ kind = "stream_k" }
    local umbrella = cuasync.program{ source = '#include <cuasync/cuasync.cuh>\n#include <cuasync/schedulers/toy.cuh>\n' ..
      'extern "C" __global__ void k(unsigned *f) { cuasync::scheduler::walk<cuasync::schedulers::toy> w(blockIdx.x, gridDim.x);' ..
      ' cuasync::scheduler::work t; while (w.next(t)) if (t.wait) cuasync::turnstile::block_wait(f, t.tile, t.k_begin); }',
      headers = S:headers(), arch = "sm_90a" }
    assert.truthy(umbrella:ptx():find(".entry k", 1, true))
    refusal(function() S:program{ file = "sched_sum.cu", headers = S:headers() } end,
      "cuasync.scheduler.program: headers already has cuasync/schedulers/toy.cuh: the scheduler writes it")
  end)

  it("a turnstile wait that hangs is named by the watchdog: the tile and the count it waited for", function()
    local watchdog = require("cuasync.watchdog")
    local r = ffi.new("cuasync_watchdog_record")
    r.state, r.block[0], r.warp = 1, 5, 0
    r.bar, r.parity, r.base, r.stage, r.role, r.iteration = 0, 0xFFFFFFFF, 0, 23, require("cuasync.hang").TURNSTILE, 7
    r.phase_parity, r.received, r.armed = 2, 0xFFFFFFFF, 0xFFFFFFFF
    r.waited_ns, r.timeout_ns = 2000e6, 2000e6
    local e = watchdog.error_from(r, { name = "sched_sum.cu", watch = { last = "sched_sum" }, program = {} }, true)
    assert.equal("cuasync.watchdog: kernel 'sched_sum' hung: block (5,0,0) warp 0 (turnstile) waited 2000 ms on the turnstile flag of tile 23 (waiting for it to count 7 k-tiles)",
                 e.message)
    assert.same({ 23, 7 }, { e.tile, e.awaited })
  end)

  -- C = A B on the CPU (double), the kernel's on the GPU: random data, C poisoned, flags zeroed once
  local function run_toy(o)
    local S = sched(o)
    local k = S:program{ file = "sched_sum.cu" }:compile():kernel("sched_sum", "ptr, ptr, ptr, ptr, ptr, ptr, u32")
    local A = cuasync.alloc(S.m * S.k * 4):fill_random{ dtype = "f32", lo = -1, hi = 1 }
    local B = cuasync.alloc(S.k * S.n * 4):fill_random{ dtype = "f32", lo = -1, hi = 1 }
    local C = cuasync.alloc(S.m * S.n * 4)
    local work = cuasync.alloc(math.max(4, S.workspace_bytes))
    local flags = cuasync.alloc(math.max(4, S.flag_bytes)):fill(0)
    local trace_max = 64
    local trace = cuasync.alloc(S.ctas * trace_max * 16):fill(0xFF)
    local a, b = A:download("float"), B:download("float")
    local want = ffi.new("float[?]", S.m * S.n)
    for i = 0, S.m - 1 do
      for j = 0, S.n - 1 do
        local acc = 0
        for q = 0, S.k - 1 do acc = acc + a[i * S.k + q] * b[q * S.n + j] end
        want[i * S.n + j] = acc
      end
    end
    local outs = {}
    for rep = 1, 2 do
      C:poison()
      k:launch(S:launch_config{ block = { S.bm * S.bn, 1, 1 } }, A, B, C, work, flags, trace, trace_max)
      cuasync.synchronize{ timeout_ms = 10000 }
      local got = C:download("float")
      local same, why = cuasync.compare(got, want, { rtol = 1e-4, atol = 1e-3 })
      assert.is_true(same, ("%s: %s"):format(o.kind, tostring(why)))
      outs[rep] = ffi.string(got, S.m * S.n * 4)
    end
    assert.is_true(outs[1] == outs[2], "the same sums in the same order, bit for bit")
    local f = flags:download("uint32_t")
    for t = 0, S.flag_count - 1 do assert.equal(0, f[t], ("flag of tile %d"):format(t)) end
    local tr = trace:download("uint32_t")
    for c = 0, S.ctas - 1 do
      for i, u in ipairs(S:units(c)) do
        if i <= trace_max then
          local w = (c * trace_max + i - 1) * 4
          assert.same({ u.tile, u.k_begin, u.k_end, (u.wait and 1 or 0) + (u.publish and 2 or 0) + (u.epilogue and 4 or 0) },
                      { tr[w], tr[w + 1], tr[w + 2], tr[w + 3] }, ("CTA %d unit %d"):format(c, i))
        end
      end
    end
  end

  for _, o in ipairs(KINDS) do
    gpu_it(("the toy kernel under %s%s gives A B on an edge shape, in the walk sched:units says"):format(o.kind,
      o.mode and (" (" .. o.mode .. ")") or ""), function() run_toy(o) end)
  end
  gpu_it("the toy kernel under stream-K with one tile over 20 CTAs (a chain of 20 turnstile waits)", function()
    run_toy{ kind = "stream_k", m = 16, n = 16, k = 64 * 8, sms = 20 }
  end)
  gpu_it("the toy kernel on every SM of the device: stream-K and serial split-K", function()
    local dev = cuasync.device(0)
    local tiles = math.ceil(200 / 16) * math.ceil(190 / 16)   -- 13 x 12 = 156
    if tiles % dev.sms ~= 0 then run_toy{ kind = "stream_k", m = 200, n = 190, k = 700, sms = dev } end
    run_toy{ kind = "split_k", splits = 5, mode = "serial", m = 200, n = 190, k = 700, sms = dev }
    run_toy{ kind = "split_k", splits = 2, mode = "reduce", m = 200, n = 190, k = 700, sms = dev }
  end)
end)
