-- The hang watchdog: a hung wait becomes a Lua error with a post-mortem, and the process keeps
-- working. CPU: options, defines, the barrier-word decoding, the error object and its
-- explanation from a hand-written record. GPU: five planted hangs, one after another in this
-- process, each raised within timeout + 1 s naming its barrier, stage and block, each followed
-- by a kernel that runs and verifies; the same hangs with the watchdog off raise "still
-- running" (in subprocesses); action = "trap" loses the context and cuasync.reset() recovers it;
-- the in-flight canary.
local ffi = require("ffi")
local cuasync = require("cuasync")
local H = require("helper")
local watchdog = require("cuasync.watchdog")
local mbarrier = cuasync.model.mbarrier

local function plan_map(box)
  return cuasync.tensormap{ ptr = 2 ^ 20, bytes = 2 ^ 30, encode = false, dtype = "f32", dims = { 4096, 4096 }, box = box }
end

describe("watchdog", function()
  local gpu_it = H.gpu_it(it, pending)

  it("reads its options from the program, the pipeline and the environment", function()
    local src = 'extern "C" __global__ void k() {}'
    assert.is_nil(cuasync.program{ source = src }.watchdog)
    local p = cuasync.program{ source = src, watchdog = true }
    assert.same({ timeout_ms = 2000, action = "exit" }, p.watchdog)
    assert.equal("2000000000ull", p.defines.CUASYNC_WATCHDOG_NS)
    p = cuasync.program{ source = src, watchdog = { timeout_ms = 500, action = "trap" } }
    assert.same({ "500000000ull", "1" }, { p.defines.CUASYNC_WATCHDOG_NS, p.defines.CUASYNC_WATCHDOG_TRAP })
    local P = cuasync.pipeline{ stages = 2, loads = { plan_map{ 32, 32 } }, producer = { warps = 1 }, consumer = { warps = 1 } }
    assert.same({ timeout_ms = 2000, action = "exit" }, P:program{ source = src }.watchdog)
    assert.is_nil(P:program{ source = src, watchdog = false }.watchdog)
    assert.error_matches(function() cuasync.program{ source = src, watchdog = 1 } end,
      'watchdog must be true, false or { timeout_ms = n, action = "exit" | "trap" } %(got 1%)')
    assert.error_matches(function() cuasync.program{ source = src, watchdog = { timeout_ms = 0 } } end,
      "watchdog.timeout_ms must be an integer in 1..3600000")
    assert.error_matches(function() cuasync.program{ source = src, watchdog = { action = "abort" } } end,
      'watchdog.action must be "exit"')
    assert.error_matches(function() cuasync.program{ source = src, watchdog = { timeout = 5 } } end,
      "unknown field 'timeout' in watchdog")
    assert.error_matches(function() cuasync.program{ source = src, watchdog = true, defines = { CUASYNC_WATCHDOG = 1 } } end,
      "defines.CUASYNC_WATCHDOG is set by the watchdog")
    local ok, out = H.luajit([[
      local c = require("cuasync")
      local p = c.program{ source = 'extern "C" __global__ void k() {}' }
      print(p.watchdog and p.watchdog.timeout_ms, p.defines.CUASYNC_WATCHDOG_NS)]],
      { CUASYNC_WATCHDOG = "1", CUASYNC_WATCHDOG_MS = "750" })
    assert.is_true(ok, out)
    assert.truthy(out:find("750\t750000000ull", 1, true), out)
    ok, out = H.luajit([[require("cuasync").program{ source = "x" }]], { CUASYNC_WATCHDOG = "yes" })
    assert.truthy(out:find("CUASYNC_WATCHDOG=\"yes\" must be 0 or 1", 1, true), out)
  end)

  it("compiles the bounded waits: %globaltimer, the abort word, exit (or trap)", function()
    local P = cuasync.pipeline{ name = "hang", stages = 2, loads = { { map = plan_map{ 64, 32 }, name = "in" } },
                                producer = { warps = 1 }, consumer = { warps = 4 } }
    local ptx = P:program{ file = "planted_hangs.cu", arch = "sm_90a", defines = { BOX_X = 64, BOX_Y = 32, HANG = 1 } }:ptx()
    for _, ins in ipairs({ "%globaltimer", "cuasync_watchdog_abort", "cuasync_watchdog_record", "exit;",
                           "mbarrier.try_wait.parity.shared::cta.b64", "atom.global.cas.b32", "membar.sys" }) do
      assert.truthy(ptx:find(ins, 1, true), "PTX lacks " .. ins)
    end
    assert.is_nil(ptx:find("trap;", 1, true))
    ptx = P:program{ file = "planted_hangs.cu", arch = "sm_90a", defines = { BOX_X = 64, BOX_Y = 32 },
                     watchdog = { action = "trap" } }:ptx()
    assert.truthy(ptx:find("trap;", 1, true))
    ptx = P:program{ file = "planted_hangs.cu", arch = "sm_90a", defines = { BOX_X = 64, BOX_Y = 32 }, watchdog = false }:ptx()
    assert.is_nil(ptx:find("%globaltimer", 1, true))
  end)

  -- a record as the device writes it, for the error object
  local function record(t)
    local r = ffi.new("cuasync_watchdog_record")
    r.state, r.block[0], r.block[1], r.block[2] = 1, t.block or 17, 0, 0
    r.warp, r.lane, r.cluster_rank = t.warp or 4, 0, t.rank or 0
    r.base, r.bar = 0x400, 0x400 + t.offset
    r.parity, r.stage, r.role, r.iteration = t.parity, t.stage, t.role, t.iteration
    r.phase_parity = t.parity
    r.received = t.received or 0xFFFFFFFF
    r.armed = t.armed or 0xFFFFFFFF
    r.waited_ns, r.timeout_ns = 2000e6, 2000e6
    return r
  end

  it("turns a record into an error naming kernel, block, warp, barrier, stage, parity and iteration", function()
    local P = cuasync.pipeline{ name = "main", stages = 4, loads = { plan_map{ 64, 64 }, plan_map{ 64, 128 } },
                                producer = { warps = 1 }, consumer = { warps = 4 } }
    local mod = { name = "k.cu", watch = { last = "mainloop" }, program = { hooks = { plan = P } } }
    -- a consumer on full[2] at iteration 37 (pass 9: parity 1) whose stage was armed: bytes differ
    local e = watchdog.error_from(record{ offset = P.full_offset + 16, parity = 1, stage = 2, role = 2, iteration = 37,
                                          armed = 40 }, mod, true)
    assert.is_true(watchdog.is_hang(e))
    assert.is_true(cuasync.is_hang(e))
    assert.equal("cuasync.watchdog: kernel 'mainloop' hung: block (17,0,0) warp 4 (consumer) waited 2000 ms on full[2] of pipeline 'main' (stage 2, phase 9, parity 1, iteration 37); 49152 bytes armed for the stage; the producer armed iteration 37 (40 armed in all)",
                 tostring(e))
    assert.same({ "hang", 17, "full[2]", 2, true, "consumer", 37 }, { e.kind, e.block[1], e.barrier, e.stage, e.context_ok, e.role, e.iteration })
    assert.truthy(e:find("full[2]", 1, true))   -- string methods work on it
    local x = e:explain()
    assert.truthy(x:find("replayed in the CPU model: 9 phases filled, then this one armed and its copies not all counted leave full[2] at phase 9, pending 0 of 1, tx 49152; test_wait.parity(1) = false", 1, true), x)
    assert.truthy(x:find("likely cause: bytes armed ≠ bytes the loads bring: the producer armed iteration 37 but the phase never completed", 1, true), x)
    -- the producer gone: iteration 5 never armed
    x = watchdog.error_from(record{ offset = P.full_offset + 8, parity = 1, stage = 1, role = 2, iteration = 5, armed = 5 },
                            mod, true):explain()
    assert.truthy(x:find("the producer never armed iteration 5 (it armed 5): it left its loop early", 1, true), x)
    -- an arrival missing on empty: the producer at iteration 4 (pass 1) waits for phase 0, which got 3 of 4
    e = watchdog.error_from(record{ offset = P.empty_offset, parity = 0, stage = 0, role = 1, iteration = 4, warp = 0,
                                    received = 3 }, mod, true)
    assert.truthy(tostring(e):find("; empty[0] has received 3 of the 4 arrivals of phase 0", 1, true), tostring(e))
    x = e:explain()
    assert.truthy(x:find("replayed in the CPU model: 3 arrivals on empty[0] (count 4) leave it at phase 0, pending 1 of 4, tx 0; test_wait.parity(0) = false", 1, true), x)
    assert.truthy(x:find("an arrival missing: 3 of 4 arrivals came in phase 0, 1 never did (a consumer warp that does not release", 1, true), x)
    -- a parity off by one: iteration 0 of a producer waits for parity 1 (the phase before init)
    x = watchdog.error_from(record{ offset = P.empty_offset, parity = 0, stage = 0, role = 1, iteration = 0, warp = 0,
                                    received = 0 }, mod, true):explain()
    assert.truthy(x:find("a parity off by one: the producer's iteration 0 (pass 0 of the 4-stage ring) waits for parity 1, but this wait asked for parity 0", 1, true), x)
    -- a lost context (action "trap"), and a wait outside any pipeline
    e = watchdog.error_from(record{ offset = 0, parity = 0, stage = 0, role = 0, iteration = 0 },
                            { name = "x.cu", watch = { last = "k" }, program = {} }, false)
    assert.equal("cuasync.watchdog: kernel 'k' hung: block (17,0,0) warp 4 waited 2000 ms on the mbarrier at shared 0x400 (parity 0); the CUDA context is lost (watchdog action \"trap\"): start a new process to use the GPU again",
                 tostring(e))
    assert.is_false(e.context_ok)
    assert.truthy(e:explain():find("no single cause stands out", 1, true))
    -- a lost context under action "exit" (which keeps it): not blamed on the watchdog
    e = watchdog.error_from(record{ offset = 0, parity = 0, stage = 0, role = 0, iteration = 0 },
                            { name = "x.cu", watch = { last = "k" }, program = { watchdog = { action = "exit", timeout_ms = 2000 } } }, false)
    assert.truthy(tostring(e):find("; the CUDA context is lost too, though the watchdog's action was \"exit\" (which keeps it): the kernel also faulted", 1, true), tostring(e))
    assert.is_false(e.context_ok)
  end)

  it("has one owner of the abort words: watchdog.raise and watchdog.lower write them, cancel and check call them", function()
    local writes = {}
    local p = io.popen("find lua/cuasync -name '*.lua' | sort")
    for f in p:lines() do
      for line in H.read(f):gmatch("[^\n]+") do
        for _, word in ipairs({ "abort", "claim", "first" }) do
          if line:match("C%.cuasync_[%w_]+%([^)]*%." .. word .. "%f[^%w_]") then writes[#writes + 1] = f end
        end
      end
    end
    p:close()
    assert.same({ "lua/cuasync/watchdog.lua", "lua/cuasync/watchdog.lua", "lua/cuasync/watchdog.lua", "lua/cuasync/watchdog.lua" }, writes)
    assert.equal("function", type(watchdog.raise))
    assert.equal("function", type(watchdog.lower))
    assert.is_nil(H.read("lua/cuasync/cancel.lua"):find("cuasync_mem", 1, true))
  end)

  it("refuses bad timeouts before any device work", function()
    assert.error_matches(function() cuasync.synchronize{ timeout_ms = 0 } end, "cuasync.synchronize: timeout_ms must be an integer in 1..")
    assert.error_matches(function() cuasync.synchronize{ timeout = 5 } end, "unknown field 'timeout'")
  end)

  -- -- GPU -------------------------------------------------------------------------------------

  local W, Hh, BX, BY = 512, 256, 64, 32
  local TIMEOUT = 500
  local function hang_kernel(stages, hang, extra)
    local tm_plan = plan_map{ BX, BY }
    local P = cuasync.pipeline{ name = "hang", stages = stages, loads = { { map = tm_plan, name = "in" } },
                                producer = { warps = 1 }, consumer = { warps = 4 } }
    local defines = { BOX_X = BX, BOX_Y = BY, HANG = hang }
    for k, v in pairs(extra or {}) do defines[k] = v end
    local k = P:program{ file = "planted_hangs.cu", defines = defines, watchdog = { timeout_ms = TIMEOUT } }:compile():kernel(
      "planted", "tensormap, ptr, u32, u32, u32")
    return P, k
  end

  -- the clean kernel after each hang: it must run and verify in the same process
  local function verify_after(src, host, dst, tm)
    local P, k = hang_kernel(3, 0)
    dst:fill(0xA5)
    k:launch(P:launch_config{ grid = 5 }, tm, dst, W, W / BX, (W / BX) * (Hh / BY))
    cuasync.synchronize()
    local got = dst:download("uint32_t", W * Hh)
    assert.equal(0, ffi.C.memcmp(got, host, W * Hh * 4), "the kernel after the hang does not verify")
  end

  local function expect_hang(fn)
    local t0 = cuasync.now_ns()
    fn()
    local ok, err = pcall(cuasync.synchronize)
    local ms = (cuasync.now_ns() - t0) / 1e6
    assert.is_false(ok, "no hang was raised")
    assert.is_true(cuasync.is_hang(err), tostring(err))
    assert.truthy(ms < TIMEOUT + 1000, ("raised after %.0f ms"):format(ms))
    assert.is_true(err.context_ok)
    return err, ms
  end

  gpu_it("raises five planted hangs, each naming its barrier, stage and block; the next kernel verifies", function()
    local src, host = H.random_words(W * Hh)
    local dst = cuasync.alloc(W * Hh * 4)
    local tm = cuasync.tensormap{ buffer = src, dtype = "f32", dims = { W, Hh }, box = { BX, BY } }
    local tiles_x, tiles = W / BX, (W / BX) * (Hh / BY)
    local S = 3
    local lines = {}
    local failures = {}
    local function planted(hang, extra, ntiles, check)
      local P, k = hang_kernel(S, hang, extra)
      local err, ms = expect_hang(function() k:launch(P:launch_config{ grid = 1 }, tm, dst, W, tiles_x, ntiles) end)
      lines[#lines + 1] = ("%.0f ms: %s \n  %s"):format(ms, tostring(err),
        err:explain():match("likely cause: [^\n]*"))
      print("\n" .. lines[#lines])
      local ok, why = pcall(check, err, P)
      if not ok then failures[#failures + 1] = ("hang %d: %s"):format(hang, tostring(why)) end
      verify_after(src, host, dst, tm)
      -- the same hang once more, replayed from a graph: the same post-mortem, naming the node
      local G = cuasync.graph(function(s)
        k:launch(P:launch_config{ grid = 1, stream = s }, tm, dst, W, tiles_x, ntiles)
      end, { name = "planted" .. hang })
      local gerr = expect_hang(function() G:launch() end)
      local gok, gwhy = pcall(function()
        assert.same({ err.barrier, err.stage, err.role, err.iteration, err.parity },
                    { gerr.barrier, gerr.stage, gerr.role, gerr.iteration, gerr.parity })
        assert.truthy(tostring(gerr):find(("cuasync.watchdog: kernel 'planted' (node 1 of graph 'planted%d') hung: block (0,0,0)"):format(hang), 1, true),
                      tostring(gerr))
      end)
      if not gok then failures[#failures + 1] = ("hang %d in a graph: %s"):format(hang, tostring(gwhy)) end
      G:close()
      verify_after(src, host, dst, tm)
    end
    -- 1: 16 bytes too many armed (S tiles: only the consumers wait)
    planted(1, { TX_DELTA = 16 }, S, function(err, P)
      assert.same({ "full[0]", 0, "consumer", 0, 0 }, { err.barrier, err.stage, err.role, err.iteration, err.block[1] })
      assert.truthy(err:explain():find("bytes armed ≠ bytes the loads bring: the producer armed iteration 0", 1, true))
    end)
    -- 1b: 16 bytes too few: on the H200 the phase does not complete either (tx-count stays -16)
    planted(1, { TX_DELTA = -16 }, S, function(err)
      assert.same({ "full[0]", 0 }, { err.barrier, err.stage })
      assert.truthy(err:explain():find("bytes armed ≠ bytes the loads bring", 1, true))
    end)
    -- 2: consumer warp 3 never releases: the producer waits on empty[0] when the ring wraps
    planted(2, nil, tiles, function(err)
      assert.same({ "empty[0]", 0, "producer", S, 0 }, { err.barrier, err.stage, err.role, err.iteration, err.block[1] })
      assert.truthy(tostring(err):find("empty[0] has received 3 of the 4 arrivals of phase 0", 1, true))
      assert.truthy(err:explain():find("an arrival missing: 3 of 4", 1, true))
    end)
    -- 3: the producer waits for the wrong parity (the consumer's) from its first iteration
    planted(3, nil, tiles, function(err)
      assert.same({ "empty[0]", 0, "producer", 0, 0 }, { err.barrier, err.stage, err.role, err.iteration, err.parity })
      assert.truthy(err:explain():find("a parity off by one", 1, true))
    end)
    -- 4: the producer leaves after S + 1 tiles: the consumers wait on full[(S + 1) % S]
    planted(4, { LEAVE_AT = S + 1 }, tiles, function(err)
      assert.same({ ("full[%d]"):format((S + 1) % S), (S + 1) % S, "consumer", S + 1 },
                  { err.barrier, err.stage, err.role, err.iteration })
      assert.truthy(err:explain():find("the producer never armed iteration 4 (it armed 4)", 1, true))
    end)
    -- 5: a cluster of 2 whose block 1 never arrives remotely: block 0's producer waits on empty[0]
    local MBX, MBY, TILES = 64, 32, 12
    local msrc = cuasync.alloc(MBX * MBY * TILES * 4)
    local mdst = cuasync.alloc(MBX * MBY * TILES * 4 * 2)
    local mtm = cuasync.tensormap{ buffer = msrc, dtype = "f32", dims = { MBX, MBY * TILES }, box = { MBX, MBY / 2 } }
    local MP = cuasync.pipeline{ name = "mc", stages = S, loads = { { map = mtm, name = "a" } }, multicast = { a = "x" },
                                 cluster = { 2, 1, 1 }, producer = { warps = 1 }, consumer = { warps = 2 } }
    local mk = MP:program{ file = "pipeline_multicast.cu", defines = { BOX_X = MBX, BOX_Y = MBY, HANG = 5 },
                           watchdog = { timeout_ms = TIMEOUT } }:compile():kernel("pipeline_multicast", "tensormap, ptr, u32, u64")
    local err, ms = expect_hang(function() mk:launch(MP:launch_config{ grid = 2 }, mtm, mdst, TILES, MBX * MBY * TILES) end)
    lines[#lines + 1] = ("%.0f ms: %s \n  %s"):format(ms, tostring(err),
      err:explain():match("likely cause: [^\n]*"))
    print("\n" .. lines[#lines])
    local ok5, why5 = pcall(function()
      assert.same({ "empty[0]", 0, "producer", S, 0, 0 }, { err.barrier, err.stage, err.role, err.iteration, err.block[1], err.cluster_rank })
      assert.truthy(err:explain():find("an arrival missing: 2 of 4", 1, true), err:explain())
    end)
    if not ok5 then failures[#failures + 1] = "hang 5: " .. tostring(why5) end
    verify_after(src, host, dst, tm)
    assert.equal(0, #failures, table.concat(failures, "\n"))
    msrc:close(); mdst:close(); src:close(); dst:close()
  end)

  it("names a cp.async pipeline's missing arrival on full: commits received of expected, per form", function()
    for _, completion in ipairs({ "mbarrier", "group" }) do
      local P = cuasync.pipeline{ name = "cp", stages = 4, completion = completion, loads = { { cp_async = 16384, name = "x" } },
                                  producer = "all", consumer = { warps = 8 } }
      local mod = { name = "cp_async_copy.cu", watch = { last = "cp_copy" }, program = { hooks = { plan = P } } }
      -- iteration 6 (pass 1) of stage 2: phase 0 took 256 arrivals, phase 1 has 255
      local e = watchdog.error_from(record{ offset = P.full_offset + 16, parity = 1, stage = 2, role = 2, iteration = 6,
                                            received = 256 + 255 }, mod, true)
      assert.equal(("cuasync.watchdog: kernel 'cp_copy' hung: block (17,0,0) warp 4 (consumer) waited 2000 ms on full[2] of pipeline 'cp' (stage 2, phase 1, parity 1, iteration 6); full[2] has received 255 of the 256 arrivals of phase 1 (%s)"):format(
        completion == "group" and "one per thread, after its wait_group" or "one cp.async.mbarrier.arrive.noinc per producer thread"), tostring(e))
      local x = e:explain()
      assert.truthy(x:find("replayed in the CPU model: 1 phases, then 255 noinc arrivals, leave full[2] at phase 1, pending 1 of 256, tx 0; test_wait.parity(1) = false", 1, true), x)
      assert.truthy(x:find(("likely cause: an arrival missing: 255 of the 256 threads arrived for iteration 6, 1 never did (%s"):format(
        completion == "group" and "a thread that left its loop" or "a producer thread that skipped producer_commit"), 1, true), x)
    end
  end)

  gpu_it("raises a planted hang of each cp.async completion form, naming stage, role, iteration and arrivals", function()
    local cp = require("cuasync.kernels.cp_async")
    local src, host = H.random_words(W * Hh)
    local dst = cuasync.alloc(W * Hh * 4)
    local tm = cuasync.tensormap{ buffer = src, dtype = "f32", dims = { W, Hh }, box = { BX, BY } }
    local failures = {}
    for planted, completion in ipairs({ "mbarrier", "group" }) do
      local v = cp.build({ completion = completion, stages = 4, tile = 16384, planted = planted, watchdog = { timeout_ms = TIMEOUT } },
                         { dst = dst, src = src, bytes = W * Hh * 4, grid = 1 })
      local err, ms = expect_hang(v.run)
      print(("\n%.0f ms: %s \n  %s"):format(ms, tostring(err), err:explain():match("likely cause: [^\n]*")))
      local ok, why = pcall(function()
        assert.same({ "full[2]", 2, "consumer", 2, "cp" }, { err.barrier, err.stage, err.role, err.iteration, err.pipeline })
        assert.truthy(tostring(err):find("full[2] has received 255 of the 256 arrivals of phase 0", 1, true), tostring(err))
        assert.truthy(err:explain():find("an arrival missing: 255 of the 256 threads arrived for iteration 2", 1, true), err:explain())
      end)
      if not ok then failures[#failures + 1] = completion .. ": " .. tostring(why) end
      verify_after(src, host, dst, tm)
    end
    assert.equal(0, #failures, table.concat(failures, "\n"))
    src:close(); dst:close()
  end)

  gpu_it("without the watchdog the same hangs raise \"still running\" under synchronize{ timeout_ms }", function()
    for _, hang in ipairs({ 1, 2, 3, 4, 5 }) do
      local ok, out = H.luajit(([[
        local ffi = require("ffi")
        ffi.cdef("void _exit(int);")
        local c = require("cuasync")
        local function map(buf, w, h, bx, by) return c.tensormap{ buffer = buf, dtype = "f32", dims = { w, h }, box = { bx, by } } end
        local hang = %d
        local src, dst = c.alloc(512 * 256 * 4), c.alloc(512 * 256 * 4 * 2)
        local P, k, run
        if hang == 5 then
          local tm = map(src, 64, 384, 64, 16)
          P = c.pipeline{ name = "mc", stages = 3, loads = { { map = tm, name = "a" } }, multicast = { a = "x" },
                          cluster = { 2, 1, 1 }, producer = { warps = 1 }, consumer = { warps = 2 } }
          k = P:program{ file = "pipeline_multicast.cu", defines = { BOX_X = 64, BOX_Y = 32, HANG = 5 }, watchdog = false }
                :compile():kernel("pipeline_multicast", "tensormap, ptr, u32, u64")
          k:launch(P:launch_config{ grid = 2 }, tm, dst, 12, 64 * 384)
        else
          local tm = map(src, 512, 256, 64, 32)
          P = c.pipeline{ name = "hang", stages = 3, loads = { { map = tm, name = "in" } }, producer = { warps = 1 },
                          consumer = { warps = 4 } }
          k = P:program{ file = "planted_hangs.cu", defines = { BOX_X = 64, BOX_Y = 32, HANG = hang, LEAVE_AT = 4 },
                         watchdog = false }:compile():kernel("planted", "tensormap, ptr, u32, u32, u32")
          k:launch(P:launch_config{ grid = 1 }, tm, dst, 512, 8, hang == 1 and 3 or 64)
        end
        local ok, err = pcall(c.synchronize, { timeout_ms = 3000 })
        print(ok, tostring(err))
        print("KIND", c.errors.kind(err), err.elapsed_ms, err.watched)
        io.stdout:flush()
        ffi.C._exit(0)   -- the kernel still runs: leave without waiting for it
      ]]):format(hang), nil, 30)
      assert.truthy(out:find("still running after 3000 ms", 1, true), ("hang %d: %s"):format(hang, out))
      -- a kind of its own: the sweep tells it from other failures without reading the text
      assert.truthy(out:find("KIND\ttimeout\t3000\tfalse", 1, true), ("hang %d: %s"):format(hang, out))
    end
    -- the GPU is still usable here
    local b = cuasync.alloc(64)
    b:fill(7)
    assert.equal(7, b:download("uint8_t", 1)[0])
    b:close()
  end)

  gpu_it("action = \"trap\" loses the context and says so; the driver then makes no new one in the process", function()
    local ok, out = H.luajit([[
      local c = require("cuasync")
      local src, dst = c.alloc(512 * 256 * 4), c.alloc(512 * 256 * 4)
      local tm = c.tensormap{ buffer = src, dtype = "f32", dims = { 512, 256 }, box = { 64, 32 } }
      local P = c.pipeline{ name = "hang", stages = 3, loads = { { map = tm, name = "in" } }, producer = { warps = 1 },
                            consumer = { warps = 4 } }
      local k = P:program{ file = "planted_hangs.cu", defines = { BOX_X = 64, BOX_Y = 32, HANG = 1 },
                           watchdog = { timeout_ms = 300, action = "trap" } }:compile():kernel("planted", "tensormap, ptr, u32, u32, u32")
      k:launch(P:launch_config{ grid = 1 }, tm, dst, 512, 8, 3)
      local ok, err = pcall(c.synchronize)
      print("HANG", c.is_hang(err), err.context_ok, err.sticky, tostring(err))
      local ok2, err2 = pcall(function() return c.alloc(64) end)
      print("AFTER", ok2, tostring(err2))
      local ok3, err3 = pcall(c.reset)
      print("RESET", ok3, tostring(err3))
      local ok4, err4 = pcall(function() return src:download("uint8_t", 4) end)
      print("OLD", ok4, tostring(err4))
      local ok5, err5 = pcall(function() k:launch(P:launch_config{ grid = 1 }, tm, dst, 512, 8, 3) end)
      print("KERNEL", ok5, tostring(err5))
    ]], nil, 60)
    assert.truthy(out:find("HANG\ttrue\tfalse\ttrue\tcuasync.watchdog: kernel 'planted' hung: block (0,0,0) warp ", 1, true), out)
    assert.truthy(out:find("full[0] of pipeline 'hang' (stage 0, phase 0, parity 0, iteration 0)", 1, true), out)
    assert.truthy(out:find("the CUDA context is lost (watchdog action \"trap\"): start a new process", 1, true), out)
    assert.truthy(out:find("AFTER\tfalse\t[^\n]-the CUDA context is lost: every later call"), out)
    assert.truthy(out:find("RESET\tfalse\t[^\n]*cuasync.reset: the driver made no new context for device 0 after the reset"), out)
    assert.truthy(out:find("OLD\tfalse\t[^\n]*the buffer was lost with cuasync.reset%(%)"), out)
    assert.truthy(out:find("KERNEL\tfalse\t[^\n]*kernel 'planted' belongs to the CUDA context that cuasync.reset%(%) ended"), out)
    assert.is_true(ok, out)
  end)

  gpu_it("cuasync.reset() on a healthy context: old handles refuse use, modules reload, new work runs", function()
    local ok, out = H.luajit([[
      local c = require("cuasync")
      local b, s, e = c.alloc(256), c.stream(), c.event()
      local m = c.program{ source = 'extern "C" __global__ void inc(unsigned char *p) { p[threadIdx.x] += 1; }' }:compile()
      local k = m:kernel("inc", "ptr")
      c.reset()
      for _, f in ipairs({ function() b:fill(1) end, function() s:synchronize() end, function() e:record() end,
                           function() k:launch({ grid = 1, block = 256 }, c.alloc(256)) end }) do
        local ok, err = pcall(f)
        print("DEAD", ok, tostring(err))
      end
      local nb = c.alloc(256)
      nb:fill(9)
      m:kernel("inc", "ptr"):launch({ grid = 1, block = 256 }, nb)
      c.synchronize()
      print("NEW", nb:download("uint8_t", 256)[255])
    ]], nil, 60)
    assert.is_true(ok, out)
    assert.truthy(out:find("DEAD\tfalse\t[^\n]*cuasync.buffer.fill: the buffer was lost with cuasync.reset%(%)"), out)
    assert.truthy(out:find("DEAD\tfalse\t[^\n]*cuasync.stream.synchronize: the stream was lost with cuasync.reset%(%)"), out)
    assert.truthy(out:find("DEAD\tfalse\t[^\n]*cuasync.event.record: the event was lost with cuasync.reset%(%)"), out)
    assert.truthy(out:find("DEAD\tfalse\t[^\n]*kernel 'inc' belongs to the CUDA context that cuasync.reset%(%) ended"), out)
    assert.truthy(out:find("NEW\t10", 1, true), out)
  end)

  gpu_it("the in-flight canary: a block that exits while bulk copies land in its shared memory", function()
    -- in a subprocess: if exiting with copies in flight lost the context, this process stays clean
    local ok, out = H.luajit([[
      local c = require("cuasync")
      local mod = c.program{ file = "spec/support/kernels/watchdog_canary.cu" }:compile()
      local issue = mod:kernel("canary_issue", "ptr, u32, u32, u32")
      local check = mod:kernel("canary_check", "u32, u32, ptr")
      local dev = c.device(0)
      local CHUNK, CHUNKS = 8192, 24            -- 192 KiB in flight per block
      local src = c.alloc(dev.sms * CHUNK * CHUNKS)
      src:fill(0x5A)
      local bad = c.alloc(4)
      for _, grace in ipairs({ 0, 200000 }) do
        bad:fill(0)
        for _ = 1, 50 do
          issue:launch({ grid = dev.sms, block = 32, smem = CHUNK * CHUNKS }, src, CHUNK, CHUNKS, grace)
          check:launch({ grid = dev.sms, block = 256, smem = CHUNK * CHUNKS }, CHUNK * CHUNKS / 4, 20000, bad)
        end
        local ok, err = pcall(c.synchronize)
        print(("CANARY grace %d us: %d KiB in flight per block, %d blocks x 50: context %s, %s words of the next kernel's shared memory changed"):format(
          grace / 1000, CHUNK * CHUNKS / 1024, dev.sms, ok and "usable" or ("lost (" .. tostring(err) .. ")"),
          ok and tostring(bad:download("uint32_t", 1)[0]) or "?"))
        if not ok then break end
      end
    ]], nil, 120)
    print("\n" .. out)
    assert.is_true(ok, out)
    -- what the watchdog relies on: after its grace period, exiting leaves the context usable and
    -- the next kernel's shared memory untouched
    assert.truthy(out:find("CANARY grace 200 us: 192 KiB in flight per block, %d+ blocks x 50: context usable, 0 words"), out)
  end)
end)
