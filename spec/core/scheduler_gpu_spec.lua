-- cuasync.scheduler on the GPU: kernels-src/sched_sum.cu gives the CPU reference on fresh random
-- data with C poisoned first, for each kind on edge shapes, in the block and the group forms of the
-- turnstile (an extra warp that never reaches the fix-up), takes the walk sched:units says, leaves
-- every flag at 0, and adds in the same order twice (bitwise); a launch after one the watchdog
-- aborted (a planted hang that leaves flags set) or after planted stale flags takes none of them.
local ffi = require("ffi")
local cuasync = require("cuasync")
local T = require("cuasync.model.tile_scheduler")
local H = require("helper")

local toy_sched = require("support.sched_toy")
local sched, KINDS = toy_sched.sched, toy_sched.KINDS
local NONE = 0xFFFFFFFF

-- The toy kernel for scheduler o, its buffers, and launch / data / check.
-- opts: group (the turnstile's group forms, SCHED_SUM_GROUP), watchdog (the program's)
local function toy(o, opts)
  opts = opts or {}
  local S = sched(o)
  local t = { S = S, trace_max = 64 }
  t.k = S:program{ file = "sched_sum.cu", defines = opts.group and { SCHED_SUM_GROUP = 1 } or nil, watchdog = opts.watchdog }
    :compile():kernel("sched_sum", "ptr, ptr, ptr, ptr, ptr, ptr, u32, u32, u32")
  t.block = S.bm * S.bn + (opts.group and 32 or 0)
  t.A, t.B, t.C = cuasync.alloc(S.m * S.k * 4), cuasync.alloc(S.k * S.n * 4), cuasync.alloc(S.m * S.n * 4)
  t.work = cuasync.alloc(math.max(4, S.workspace_bytes))
  t.flags = cuasync.alloc(math.max(4, S.flag_bytes)):fill(0)
  t.trace = cuasync.alloc(S.ctas * t.trace_max * 16):fill(0xFF)
  -- fresh random A and B, and C = A B on the CPU (double)
  function t.data()
    t.A:fill_random{ dtype = "f32", lo = -1, hi = 1 }
    t.B:fill_random{ dtype = "f32", lo = -1, hi = 1 }
    local a, b = t.A:download("float"), t.B:download("float")
    t.want = ffi.new("float[?]", S.m * S.n)
    for i = 0, S.m - 1 do
      for j = 0, S.n - 1 do
        local acc = 0
        for q = 0, S.k - 1 do acc = acc + a[i * S.k + q] * b[q * S.n + j] end
        t.want[i * S.n + j] = acc
      end
    end
  end
  function t.launch(skip)
    t.C:poison()
    t.k:launch(S:launch_config{ block = { t.block, 1, 1 } }, t.A, t.B, t.C, t.work, t.flags, t.trace, t.trace_max,
               S:next_epoch(), skip or NONE)
  end
  function t.check(what)
    local got = t.C:download("float")
    local same, why = cuasync.compare(got, t.want, { rtol = 1e-4, atol = 1e-3 })
    assert.is_true(same, ("%s: %s"):format(what or o.kind, tostring(why)))
    return ffi.string(got, S.m * S.n * 4)
  end
  function t.flags_zero(what)
    local f = t.flags:download("uint32_t")
    for i = 0, S.flag_count - 1 do assert.equal(0, f[i], ("%s: flag of slot %d"):format(what or o.kind, i)) end
  end
  return t
end

local function run_toy(o, opts)
  local t = toy(o, opts)
  local S = t.S
  t.data()
  local outs = {}
  for rep = 1, 2 do
    t.launch()
    cuasync.synchronize{ timeout_ms = 10000 }
    outs[rep] = t.check()
  end
  assert.is_true(outs[1] == outs[2], "the same sums in the same order, bit for bit")
  t.flags_zero()
  local tr = t.trace:download("uint32_t")
  for c = 0, S.ctas - 1 do
    for i, u in ipairs(S:units(c)) do
      if i <= t.trace_max then
        local w = (c * t.trace_max + i - 1) * 4
        assert.same({ u.tile, u.k_begin, u.k_end, (u.wait and 1 or 0) + (u.publish and 2 or 0) + (u.epilogue and 4 or 0) },
                    { tr[w], tr[w + 1], tr[w + 2], tr[w + 3] }, ("CTA %d unit %d"):format(c, i))
      end
    end
  end
end

describe("cuasync.scheduler on the GPU", function()
  local gpu_it = H.gpu_it(it, pending)

  for _, o in ipairs(KINDS) do
    for _, group in ipairs({ false, true }) do
      gpu_it(("the toy kernel under %s%s gives A B on an edge shape, in the walk sched:units says%s"):format(o.kind,
        o.mode and (" (" .. o.mode .. ")") or "", group and " (the turnstile's group forms, a warp beside)" or ""), function()
        run_toy(o, { group = group })
      end)
    end
  end
  gpu_it("the toy kernel under stream-K with one tile over 20 CTAs (a chain of 20 turnstile waits)", function()
    run_toy{ kind = "stream_k", m = 16, n = 16, k = 64 * 8, sms = 20 }
    run_toy({ kind = "stream_k", m = 16, n = 16, k = 64 * 8, sms = 20 }, { group = true })
  end)
  gpu_it("the toy kernel on every SM of the device: stream-K and serial split-K", function()
    local dev = cuasync.device(0)
    local tiles = math.ceil(200 / 16) * math.ceil(190 / 16)   -- 13 x 12 = 156
    if tiles % dev.sms ~= 0 then run_toy{ kind = "stream_k", m = 200, n = 190, k = 700, sms = dev } end
    run_toy{ kind = "split_k", splits = 5, mode = "serial", m = 200, n = 190, k = 700, sms = dev }
    run_toy{ kind = "split_k", splits = 2, mode = "reduce", m = 200, n = 190, k = 700, sms = dev }
  end)

  -- skip: a CTA whose units sit in the middle of their tiles' chains (its predecessor's flag stays
  -- set once it took it, and the CTA after it hangs): stream-K's chain of 20, serial split-K's split 1
  local ABORTS = {
    { o = { kind = "stream_k", m = 16, n = 16, k = 64 * 8, sms = 20 }, skip = 5 },
    { o = { kind = "split_k", splits = 3, mode = "serial" }, skip = 1 },
  }
  gpu_it("a launch after planted stale flags (an older epoch's tags, NaN partials) takes none of them", function()
    for _, a in ipairs(ABORTS) do
      local t = toy(a.o)
      local S = t.S
      t.data()
      local old = S:next_epoch()
      local f = ffi.new("uint32_t[?]", S.flag_count)
      for c = 0, S.ctas - 1 do
        for _, u in ipairs(S:units(c)) do if u.wait then f[u.slot] = T.tag(old, u.k_begin) end end
      end
      t.flags:upload(f, S.flag_count * 4)
      t.work:fill(0xFF)   -- every partial NaN
      t.launch()
      cuasync.synchronize{ timeout_ms = 10000 }
      t.check(a.o.kind .. " after stale flags")
      t.flags_zero(a.o.kind .. " after stale flags")
    end
  end)

  gpu_it("a launch after one the watchdog aborted (a planted hang) takes none of its flags: fresh data, the right sums", function()
    for _, a in ipairs(ABORTS) do
      for _, group in ipairs({ false, true }) do
        local what = a.o.kind .. (group and " (group forms)" or "")
        local t = toy(a.o, { group = group, watchdog = { timeout_ms = 300 } })
        local S = t.S
        t.data()
        local t0 = cuasync.now_ns()
        t.launch(a.skip)
        local ok, err = pcall(cuasync.synchronize)
        assert.is_false(ok, what .. ": no hang was raised")
        assert.is_true(cuasync.is_hang(err), tostring(err))
        assert.is_true(err.context_ok, what)
        assert.truthy((cuasync.now_ns() - t0) / 1e6 < 300 + 1000, what .. ": the launch ended late")
        assert.same({ "turnstile", S.epoch }, { err.role, err.epoch }, tostring(err))
        local f, left = t.flags:download("uint32_t"), 0
        for i = 0, S.flag_count - 1 do
          if f[i] ~= 0 then
            left = left + 1
            assert.equal(S.epoch, (T.untag(f[i])), what)
          end
        end
        assert.is_true(left > 0, what .. ": the aborted launch left no flag set (the spec plants nothing)")
        t.data()   -- new A and B: the aborted launch's partials are wrong for them
        t.launch()
        cuasync.synchronize{ timeout_ms = 10000 }
        t.check(what .. " after the abort")
        t.flags_zero(what .. " after the abort")
      end
    end
  end)
end)
