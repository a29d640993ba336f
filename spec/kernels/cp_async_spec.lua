-- cp.async pipelines as plans: the derivations (copies per thread, full/empty counts, wait_group
-- depth, shared memory, the generated Config), every refusal by name, the protocol checker on
-- both completion forms and its planted faults, the seeds' cuda::pipeline staging pattern as a
-- plan; on the GPU, kernels-src/cp_async_copy.cu built from plans copies and gathers fresh random
-- data correctly (poisoned first) for each completion form, role form and vector size, and so do
-- the hand-written ring and libcu++ yardsticks.
local ffi = require("ffi")
local cuasync = require("cuasync")
local H = require("helper")
local cp = require("cuasync.kernels.cp_async")

local function plan(extra)
  local s = { name = "cp", stages = 4, loads = { { cp_async = 16384, vector = 16, name = "x" } }, producer = "all",
              consumer = { warps = 8 } }
  for k, v in pairs(extra or {}) do s[k] = v end
  return cuasync.pipeline(s)
end

describe("cp.async plans", function()
  local gpu_it = H.gpu_it(it, pending)

  it("derive the copies each producer thread issues and the barriers' counts", function()
    local P = plan()
    assert.same({ "cp_async", "mbarrier", 256, 256, 8 }, { P.kind, P.completion, P.producer_threads, P.full_count, P.empty_count })
    assert.equal(4, P.loads[1].copies)            -- 16384 / 16 / 256
    assert.equal(0, P.tx_bytes)
    -- stage buffers on 128-byte lines (16 mod 32 doubled the L2 reads on the H200): the dynamic
    -- base is 16-aligned by contract, so 112 bytes of slack
    assert.same({ 128, 112 }, { P.align, P.slack })
    assert.equal(4 * 16384 + 8 * 8 + 112, P.smem_bytes)
    local two = plan{ producer = { threads = 48 }, consumer = { threads = 96 },
                      loads = { { cp_async = 576, vector = 4, name = "a" }, { cp_async = 768, vector = 16, name = "b" } } }
    assert.same({ 0, 640, 1408 }, { two.loads[1].offset, two.loads[2].offset, two.pitch })   -- 576 B rounds up to 5 lines
    local W = plan{ producer = { warps = 2 }, consumer = { warps = 4 }, loads = { { cp_async = 8192, vector = 4 } } }
    assert.same({ 64, 64, 4, 32, 192 }, { W.producer_threads, W.full_count, W.empty_count, W.loads[1].copies, W.block })
    assert.equal("ca", W.loads[1].cache)         -- 4- and 8-byte vectors take .ca
    local T = plan{ producer = { threads = 48 }, consumer = { threads = 96 }, loads = { { cp_async = 48 * 8 * 3, vector = 8 } } }
    assert.same({ 48, 2, 3, 160, 96 }, { T.producer_threads, T.roles.producer_warps, T.loads[1].copies, T.block, T.empty_count })
    local G = plan{ completion = "group", stages = 5 }
    assert.same({ 4, 256 }, { G.wait_depth, G.full_count })   -- stages - 1 in flight; one arrival per thread
    local R = plan{ loads = { { cp_async = 16384, vector = 16, row = 512, name = "x" } } }
    assert.same({ 512, 32 }, { R.loads[1].row, R.loads[1].rows })
  end)

  it("writes the counts into the Config and explains them", function()
    local h = plan{ completion = "group", producer = "all", consumer = { threads = 256 } }:header()
    for _, want in ipairs({ "static constexpr int completion = 2;", "static constexpr unsigned producer_threads = 256u;",
                            "static constexpr unsigned full_count = 256u;", "static constexpr int wait_depth = 3;",
                            "static constexpr unsigned load_vector[1] = { 16 };", "static constexpr unsigned load_copies[1] = { 4 };",
                            "static constexpr int load_cg[1] = { 1 };", "progress_committed = 5u, progress_words = 9u;" }) do
      assert.truthy(h:find(want, 1, true), want)
    end
    local e = plan{ producer = { warps = 2 }, consumer = { warps = 4 } }:explain()
    for _, want in ipairs({ 'cp.async, completion = "mbarrier"; partitioned: 64 producer threads (2 warps) copy, 4 warps consume = 192 threads',
                            "each of the 64 producer threads issues 16 copies per stage (vector 16: source and destination 16-byte aligned)",
                            "full: 64 arrivals, one cp.async.mbarrier.arrive.noinc per producer thread",
                            "empty: 4 arrivals" }) do
      assert.truthy(e:find(want, 1, true), want .. "\n" .. e)
    end
    e = plan{ completion = "group" }:explain()
    assert.truthy(e:find("waits with cp.async.wait_group 3 (stages - 1 groups in flight; in the tail", 1, true), e)
    assert.truthy(plan{ loads = { { cp_async = 8192, vector = 8 } } }:explain():find("vector 8: source and destination 8-byte aligned, .ca only", 1, true))
    plan():check("sm_90")
    assert.error_matches(function() plan{ stages = 16 }:check("sm_90") end, "needs 262512 bytes of dynamic shared memory")
  end)

  it("refuses each bad input by name before any compile", function()
    local function refuses(pattern, extra)
      local ok, err = pcall(plan, extra)
      assert.is_false(ok, pattern)
      assert.truthy(err:find(pattern, 1, true), ("%s\n  got: %s"):format(pattern, err))
    end
    refuses("loads[1].vector must be 4, 8 or 16: the bytes one cp.async copies (got 32)", { loads = { { cp_async = 16384, vector = 32 } } })
    refuses("loads[1] (load1): 16000 B per stage in 16-byte vectors is 1000 copies, which 256 producer threads cannot share evenly (1000 / 256 is not a whole number)",
            { loads = { { cp_async = 16000 } } })
    refuses("4112 B per stage in 16-byte vectors is 257 copies, which 64 producer threads cannot share evenly",
            { loads = { { cp_async = 4112 } }, producer = { warps = 2 }, consumer = { warps = 2 } })
    refuses('loads[1].cache = "cg" needs vector = 16: cp.async.cg copies 16 bytes only (got vector = 8)',
            { loads = { { cp_async = 16384, vector = 8, cache = "cg" } } })
    refuses('completion = "group" needs producer = "all": a thread can wait only for its own cp.async groups',
            { completion = "group", producer = { warps = 1 }, consumer = { warps = 4 } })
    refuses('completion = "group" with a cluster', { completion = "group", cluster = { 2, 1, 1 } })
    local function bulk(extra)
      local s = { name = "b", stages = 2, stage_bytes = 4096, producer = { warps = 1 }, consumer = { warps = 4 } }
      for k, v in pairs(extra) do s[k] = v end
      return function() return cuasync.pipeline(s) end
    end
    assert.error_matches(bulk{ completion = "group" }, 'completion = "group" is for cp.async loads; a TMA or bulk stage completes when its tx bytes land')
    assert.error_matches(bulk{ producer = { threads = 32 } }, "producer = { threads = n } is for cp.async loads", 1, true)
    refuses("producer.threads must be an integer in 1..1024 (got 0)", { producer = { threads = 0 }, consumer = { warps = 4 } })
    refuses("producer.warps must be an integer in 1..32 (got 0)", { producer = { warps = 0 }, consumer = { warps = 4 } })
    refuses('completion must be "mbarrier" or "group" (got "tx")', { completion = "tx" })
    refuses("loads[1].row = 500 is not a multiple of its vector (16 bytes)", { loads = { { cp_async = 16384, row = 500 } } })
    refuses("loads[1].row = 768 does not divide the stage's 16384 bytes", { loads = { { cp_async = 16384, row = 768 } } })
    refuses("loads[1].zero_fill must be true or false", { loads = { { cp_async = 16384, zero_fill = 1 } } })
    refuses("loads[1].cp_async = 4100 is not a multiple of its vector (8 bytes)", { loads = { { cp_async = 4100, vector = 8 } } })
    refuses("multicast is for tensor-map loads", { cluster = { 2, 1, 1 }, multicast = { x = "x" } })
    local tm = cuasync.tensormap{ ptr = 2 ^ 20, bytes = 2 ^ 30, encode = false, dtype = "f32", dims = { 4096, 4096 }, box = { 64, 32 } }
    refuses("loads mixes cp.async loads (loads[1]) and tensor maps (loads[2])",
            { loads = { { cp_async = 16384 }, { map = tm, name = "t" } }, producer = { warps = 1 }, consumer = { warps = 4 } })
    -- the driver's yardstick options
    assert.error_matches(function() cp.program{ align = 16 } end, "opts.align is the yardsticks' %(impl ring or cxx%)")
    assert.error_matches(function() cp.program{ impl = "ring", align = 64 } end, "opts.align must be 128 or 16 %(got 64%)")
    assert.error_matches(function() cp.program{ impl = "cxx", release = "thread" } end, "is the hand%-written streaming copy")
    assert.error_matches(function() cp.program{ impl = "ring", vector = 2 } end, "opts.vector must be 16, 8 or 4 %(got 2%)")
    assert.error_matches(function() cp.program{ impl = "cxx", stages = 0 } end, "opts.stages must be an integer in 1..64 %(got 0%)")
    assert.error_matches(function() cp.program{ impl = "ring", vector = 16, tile = 2048 } end,
      "tile = 2048: the hand%-written copies need a multiple of 16 x 256 = 4096 bytes")
  end)

  it("simulate both completion forms and both role forms to completion", function()
    for _, extra in ipairs({ {}, { completion = "group" }, { producer = { warps = 2 }, consumer = { warps = 4 } },
                             { producer = { threads = 48 }, consumer = { threads = 96 }, loads = { { cp_async = 48 * 16 * 2 } } },
                             { completion = "group", stages = 1 }, { consumer = { warps = 8 }, release = "thread" } }) do
      for _, S in ipairs({ 1, 2, 3, 5 }) do
        extra.stages = S
        local r = plan(extra):simulate{ runs = 10, seed = S }
        assert.is_true(r.ok, r.ok or r:report())
      end
    end
  end)

  it("find each planted fault: a skipped noinc arrival, a wait_group too shallow, an early read, a stale stage", function()
    local r = plan():mutate{ skip_commit = 2 }:simulate{ runs = 5 }
    assert.same({ "deadlock", "full", 2 }, { r.kind, r.which, r.stage })
    assert.truthy(r.message:find("full[2] got 255 of its 256 arrivals", 1, true), r.message)
    r = plan{ completion = "group" }:mutate{ wait_depth_delta = 1 }:simulate{ runs = 20 }
    assert.same({ "race", "stage" }, { r.kind, r.which })
    assert.truthy(r.message:find("is still in flight: the read does not wait for that copy's group", 1, true), r.message)
    r = plan{ producer = { warps = 1 }, consumer = { warps = 4 } }:mutate{ early_read = true }:simulate{ runs = 20 }
    assert.equal("race", r.kind)
    r = plan{ completion = "group" }:mutate{ producer_exits_at = 5 }:simulate{ runs = 5, iterations = 9 }
    assert.same({ "stale", 1 }, { r.kind, r.stage })
    assert.truthy(r.message:find("reads stage[1] for iteration 5, but the last copy", 1, true), r.message)
    -- release = "warpgroup" lets one warp release for four: a plain cp.async consumer whose
    -- warpgroup does not synchronize first (as wgmma.wait_group does) races the refill
    r = plan{ release = "warpgroup" }:simulate{ runs = 50 }
    assert.equal("race", r.kind, r.ok and "no race found" or r.message)
    assert.error_matches(function() plan():mutate{ wait_depth_delta = 1 } end,
      'wait_depth_delta is a fault of completion = "group" plans; pipeline \'cp\' is completion = "mbarrier"')
    assert.error_matches(function() plan():mutate{ tx_delta = 16 } end, "a cp.async plan arms no tx bytes")
    assert.error_matches(function() plan():mutate{ early_read = 1 } end, "early_read must be true")
  end)

  it("group form: each consume waits with min(groups committed after it, stages - 1) pending, so the tail drains to wait_group 0 (docs/cp-async.md)", function()
    -- the model's protocol of the plan, run on a recording role: the wait_group depth of each
    -- consume of one warp of a unified loop, 3 stages, 6 tiles (the table in the guide)
    local protocol = require("cuasync.model.pipeline_protocol")
    local P = plan{ stages = 3, completion = "group" }
    assert.equal(2, P.wait_depth)
    local spec = protocol.spec_cp(P, 6, {})
    local waits, commits, t = {}, 0, {}
    t.bar = { full = setmetatable({}, { __index = function(_, s) return "full" .. s end }),
              empty = setmetatable({}, { __index = function(_, s) return "empty" .. s end }) }
    setmetatable(t, { __index = function(_, op)
      return function(_, n)
        if op == "commit_group" then commits = commits + 1 end
        if op == "wait_group" then waits[#waits + 1] = ("%d committed, wait_group %d"):format(commits, n) end
      end
    end })
    spec.roles.warp00(t)
    assert.same({ "3 committed, wait_group 2", "4 committed, wait_group 2", "5 committed, wait_group 2", "6 committed, wait_group 2",
                  "6 committed, wait_group 1", "6 committed, wait_group 0" }, waits)
    -- the header's wait_groups<wait_depth> branches down to the same count
    assert.truthy(P:header():find("static constexpr int wait_depth = 2;", 1, true))
    assert.truthy(P:explain():find("in the tail, where no later stage is committed, as many as were: down to wait_group 0 for the last", 1, true))
  end)

  it("express the seeds' cuda::pipeline staging pattern as a plan", function()
    -- the seeds: a block of 128 threads, each stages its own 4 floats per tile with
    -- cuda::memcpy_async into a 2-stage cuda::pipeline (thread scope: async-groups), computes on
    -- stage i while stage i + 1 lands, consumer_wait_prior<1> (one group left in flight)
    local P = cuasync.pipeline{ name = "cp", stages = 2, completion = "group", producer = "all", consumer = { threads = 128 },
                                loads = { { cp_async = 128 * 16, vector = 16, name = "x" } } }
    assert.same({ 1, 128, 128, 1 }, { P.wait_depth, P.full_count, P.empty_count, P.loads[1].copies })
    assert.is_true(P:simulate{ runs = 20, iterations = 9 }.ok)
    local ptx = P:program{ file = "cp_async_copy.cu", arch = "sm_90a" }:ptx()
    assert.truthy(ptx:find("cp.async.wait_group 1", 1, true))
    assert.truthy(ptx:find("cp.async.commit_group", 1, true))
  end)

  it("compile for each form: the PTX holds the planned copy, completion and wait depth", function()
    local cases = {
      { { completion = "group", stages = 6 }, { "cp.async.cg.shared.global", "cp.async.commit_group", "cp.async.wait_group 5" } },
      { { loads = { { cp_async = 8192, vector = 8, name = "x" } } }, { "cp%.async%.ca%.shared%.global %[%%r%d+%], %[%%rd%d+%], 8;", "cp.async.mbarrier.arrive.noinc" } },
      { { loads = { { cp_async = 8192, vector = 4, name = "x", row = 256 } }, producer = { threads = 64 }, consumer = { warps = 4 } },
        { "cp%.async%.ca%.shared%.global %[%%r%d+%], %[%%rd%d+%], 4;", "cp.async.mbarrier.arrive.noinc" } },
      { { loads = { { cp_async = 16384, vector = 16, name = "x", cache = "ca", zero_fill = true } } },
        { "cp%.async%.ca%.shared%.global %[%%r%d+%], %[%%rd%d+%], 16, %%r%d+;" } },
    }
    for _, c in ipairs(cases) do
      local ptx = plan(c[1]):program{ file = "cp_async_copy.cu", arch = "sm_90a", watchdog = false }:ptx()
      for _, pat in ipairs(c[2]) do assert.truthy(ptx:find(pat) or ptx:find(pat, 1, true), pat) end
    end
    -- the yardsticks copy with the vector they are given, as a plan would (libcu++ sizes its
    -- copies from the element type too: a uint4 tile would stay at 16 bytes)
    for _, impl in ipairs({ "ring", "cxx" }) do
      for _, v in ipairs({ { 16, "cp%.async%.cg%.shared%.global %[%%r%d+%], %[%%rd%d+%], 16" },
                           { 8, "cp%.async%.ca%.shared%.global %[%%r%d+%], %[%%rd%d+%], 8" },
                           { 4, "cp%.async%.ca%.shared%.global %[%%r%d+%], %[%%rd%d+%], 4" } }) do
        local ptx = cp.program{ impl = impl, vector = v[1], stages = 2 }:ptx()
        assert.truthy(ptx:find(v[2]), ("%s, vector %d: %s"):format(impl, v[1], v[2]))
      end
    end
  end)

  gpu_it("copy and gather fresh random data through plans of each form (poisoned first), and the yardsticks", function()
    local bytes = 8 * 2 ^ 20 + 3 * 4096   -- not a whole number of 16 KiB tiles: the zero-fill case pads it
    local tile, row = 16384, 256
    local tiles = math.ceil(bytes / tile)
    local padded = tiles * tile
    local src, dst = cuasync.alloc(padded), cuasync.alloc(padded)
    local host = cuasync.host_alloc(padded)
    local words = ffi.cast("uint32_t *", host.ptr)
    for i = 0, padded / 4 - 1 do words[i] = H.random_u32() end
    src:upload(host)
    -- gather: row r of the output is row idx[r] of the input (a random permutation of rows)
    local rows = padded / row
    local idx_host = cuasync.host_alloc(rows * 4)
    local idx = ffi.cast("uint32_t *", idx_host.ptr)
    for r = 0, rows - 1 do idx[r] = r end
    for r = rows - 1, 1, -1 do
      local j = H.random_u32() % (r + 1)
      idx[r], idx[j] = idx[j], idx[r]
    end
    local didx = cuasync.alloc(rows * 4)
    didx:upload(idx_host)
    local gathered, copied, padded_copy = cuasync.host_alloc(padded), cuasync.host_alloc(padded), cuasync.host_alloc(padded)
    for r = 0, rows - 1 do ffi.copy(ffi.cast("uint8_t *", gathered.ptr) + r * row, ffi.cast("uint8_t *", host.ptr) + idx[r] * row, row) end
    ffi.copy(copied.ptr, host.ptr, padded)
    ffi.copy(padded_copy.ptr, host.ptr, bytes)
    ffi.fill(ffi.cast("uint8_t *", padded_copy.ptr) + bytes, padded - bytes, 0)
    local back = cuasync.host_alloc(padded)
    local n = 0
    local function check(opts, b)
      b.dst, b.back = dst, back
      local v = cp.build(opts, b)
      v.poison()
      v.run()
      local ok, why = v.verify()
      assert.is_true(ok, why)
      v.poison()   -- and verify sees a wrong result
      cuasync.synchronize()
      assert.is_false((v.verify()))
      n = n + 1
    end
    for _, completion in ipairs({ "mbarrier", "group" }) do
      for _, producer in ipairs({ "all", { warps = 2 }, { threads = 64 } }) do
        if completion == "mbarrier" or producer == "all" then
          for _, vector in ipairs({ 16, 8, 4 }) do
            for _, stages in ipairs({ 1, 3 }) do
              local o = { completion = completion, producer = producer, vector = vector, stages = stages, tile = tile }
              check(o, { src = src, bytes = padded, expect = copied })
              o.work, o.row = "gather", row
              check(o, { src = src, bytes = padded, idx = didx, expect = gathered })
            end
          end
        end
      end
    end
    check({ zero_fill = true, stages = 2, tile = tile, vector = 16 }, { src = src, bytes = bytes, expect = padded_copy })
    check({ zero_fill = true, stages = 2, tile = tile, vector = 8, completion = "group" }, { src = src, bytes = bytes, expect = padded_copy })
    for _, impl in ipairs({ "ring", "cxx" }) do
      for _, stages in ipairs({ 1, 4 }) do check({ impl = impl, stages = stages, tile = tile }, { src = src, bytes = padded, expect = copied }) end
      for _, vector in ipairs({ 8, 4 }) do check({ impl = impl, stages = 3, tile = tile, vector = vector }, { src = src, bytes = padded, expect = copied }) end
    end
    assert.equal(2 * 3 * 3 * 2 + 3 * 2 * 2 + 2 + 8, n)
    for _, b in ipairs({ src, dst, didx }) do b:close() end
    for _, b in ipairs({ host, idx_host, gathered, copied, padded_copy, back }) do b:close() end
  end)
end)
