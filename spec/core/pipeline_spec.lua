-- cuasync.pipeline: plans (numbers, layout, header, checks, bad input), the protocol checker
-- (cuasync.model.run, P:simulate, P:mutate) on the CPU; on the GPU, kernels built from plans
-- (kernels-src/pipeline_tma.cu, pipeline_multicast.cu) copy fresh random data correctly for
-- every stage count and both role forms, and a kernel refuses a tensor map or launch that does
-- not match its plan.
local ffi = require("ffi")
local cuasync = require("cuasync")
local H = require("helper")

local function plan_map(spec)   -- a plan-only map: no GPU needed
  local s = { ptr = 2 ^ 20, bytes = 2 ^ 30, encode = false }
  for k, v in pairs(spec) do s[k] = v end
  return cuasync.tensormap(s)
end

local A = plan_map{ dtype = "f16", dims = { 4096, 4096 }, box = { 64, 64 }, swizzle = "128B" }
local B = plan_map{ dtype = "f16", dims = { 4096, 4096 }, box = { 64, 128 }, swizzle = "128B" }

local function plan(extra)
  local s = { name = "main", stages = 4, loads = { { map = A, name = "A" }, { map = B, name = "B" } },
              producer = { warps = 1 }, consumer = { warps = 4 } }
  for k, v in pairs(extra or {}) do s[k] = v end
  return cuasync.pipeline(s)
end

describe("pipeline plan", function()
  it("derives tx, smem, block and the layout from its loads", function()
    local P = plan()
    assert.equal(8192 + 16384, P.tx_bytes)
    assert.equal(160, P.block)
    assert.equal(1024, P.align)
    assert.equal(24576, P.pitch)
    -- 4 stages, 8 barriers, and 1008 bytes so that a 16-byte-aligned base can be rounded to 1024
    assert.equal(4 * 24576 + 8 * 8 + 1008, P.smem_bytes)
    local L = P:layout()
    assert.same({ name = "stage[0].A", offset = 0, bytes = 8192, align = 1024 }, L[1])
    assert.same({ name = "stage[0].B", offset = 8192, bytes = 16384, align = 1024 }, L[2])
    assert.same({ name = "stage[3].B", offset = 3 * 24576 + 8192, bytes = 16384, align = 1024 }, L[8])
    assert.same({ name = "full[0]", offset = 98304, bytes = 8, align = 8 }, L[9])
    assert.same({ name = "empty[3]", offset = 98304 + 56, bytes = 8, align = 8 }, L[16])
    assert.equal(1, P.full_count)
    assert.equal(4, P.empty_count)
  end)

  it("plans from tensor maps built without a driver (encode = false), checked like any map", function()
    assert.is_false(A.encoded)
    assert.is_nil(A.map)
    assert.truthy(tostring(A):find("tensormap (not encoded) f16 rank 2", 1, true))
    assert.error_matches(function() plan_map{ dtype = "f16", dims = { 64, 64 }, box = { 64, 64 }, encode = "no" } end,
      "encode must be a boolean")
    assert.error_matches(function() plan_map{ dtype = "f16", dims = { 64, 64 }, box = { 128, 8 }, swizzle = "128B" } end,
      "box%[1%] %* 2 bytes")
  end)

  it("aligns each stage buffer to its swizzle's repeat", function()
    local C = plan_map{ dtype = "f32", dims = { 256, 256 }, box = { 8, 8 }, swizzle = "32B" }   -- 256 B
    local P = cuasync.pipeline{ stages = 3, loads = { C, A }, producer = { warps = 1 }, consumer = { warps = 1 } }
    local L = P:layout()
    assert.same({ 0, 1024 }, { L[1].offset, L[2].offset })        -- A waits for the next 1024
    assert.equal(1024 + 8192, P.pitch)
    for _, e in ipairs(L) do assert.equal(0, e.offset % e.align, e.name) end
  end)

  it("places a scratch region after the barriers, 1024-aligned, and counts it", function()
    local base = plan()
    local P = plan{ scratch = 8192 }
    local L = P:layout()
    assert.same({ name = "scratch", offset = 99328, bytes = 8192, align = 1024 }, L[#L])   -- 98304 + 64 -> 1024-aligned
    assert.equal(base.smem_bytes - base.barrier_end + 99328 + 8192 - base.slack + P.slack, P.smem_bytes)
    assert.truthy(P:header():find("static constexpr unsigned scratch_offset = 99328u, scratch_bytes = 8192u;", 1, true))
    assert.truthy(P:explain():find("scratch: 8192 B at 99328", 1, true))
    assert.error_matches(function() plan{ scratch = -1 } end, "scratch must be an integer in 0..1048576")
  end)

  it("counts roles: unified, partitioned, warps or threads", function()
    local P = plan{ producer = "all", consumer = { warps = 4 } }
    assert.same({ 128, 4 }, { P.block, P.empty_count })
    P = plan{ producer = { warps = 2 }, consumer = { threads = 96 } }
    assert.same({ 160, 96 }, { P.block, P.empty_count })
    P = cuasync.pipeline{ stages = 2, stage_bytes = 4096, producer = "all", consumer = { threads = 64 } }
    assert.same({ 4096, 64, 16 }, { P.tx_bytes, P.block, P.align })
  end)

  it("writes the config header and the defines", function()
    local P = plan()
    local h = P:header()
    assert.truthy(h:find("struct main {", 1, true))
    assert.truthy(h:find("static constexpr unsigned tx_bytes = 24576u;", 1, true))
    assert.truthy(h:find("static constexpr unsigned load_offset[2] = { 0, 8192 };", 1, true))
    assert.truthy(h:find("static constexpr int B = 1;", 1, true))
    assert.truthy(h:find("static constexpr unsigned empty_count = 4u;", 1, true))
    -- the watchdog's progress words are placed by the Config, not by pipeline.cuh or watchdog.cuh
    assert.truthy(h:find("progress_received = 0u, progress_armed = 4u, progress_committed = 0u, progress_words = 5u;", 1, true))
    assert.truthy(h:find("static constexpr int completion = 0;", 1, true))
    assert.same({ MAIN_STAGES = 4, MAIN_TX_BYTES = 24576, MAIN_SMEM_BYTES = P.smem_bytes, MAIN_BLOCK = 160,
                  MAIN_STAGE_PITCH = 24576 }, P:defines())
    local prog = P:program{ source = "#include <cuasync/pipelines/main.cuh>\nextern \"C\" __global__ void k() {}" }
    assert.equal(P, prog.hooks.plan)
    assert.equal(24576, prog.defines.MAIN_TX_BYTES + 0)
    assert.same({ "cuasync/pipelines/main.cuh" }, prog.headers.names)
  end)

  it("compiles its header into a kernel (pipeline<Config>, both role forms)", function()
    for _, prod in ipairs({ "all", { warps = 1 } }) do
      local tm = plan_map{ dtype = "f32", dims = { 4096, 4096 }, box = { 64, 32 } }
      local P = cuasync.pipeline{ name = "tma", stages = 3, loads = { { map = tm, name = "in" } }, producer = prod,
                                  consumer = { warps = 4 } }
      local cubin = P:program{ file = "pipeline_tma.cu", defines = { BOX_X = 64, BOX_Y = 32 } }:compile():cubin()
      assert.truthy(#cubin > 1000)
    end
  end)

  it("explains the derivation", function()
    local e = plan():explain()
    assert.truthy(e:find("pipeline 'main': 4 stages, partitioned: 1 warp produce", 1, true), e)
    assert.truthy(e:find("load A: tensormap f16 box {64, 64} x 2 B = 8192 B per box", 1, true), e)
    assert.truthy(e:find("tx per stage: 8192 + 16384 = 24576 B", 1, true), e)
    assert.truthy(e:find('empty: 4 arrivals (release = "warp": one lane of each of 4 consumer warps)', 1, true), e)
  end)

  it("checks the plan against a device, naming the limit and the excess", function()
    local dev = { name = "H200", cc = 90, smem_optin = 232448, reserved_smem_per_block = 1024, max_threads_per_block = 1024 }
    assert.equal(8, plan{ stages = 8 }:check(dev).stages)
    local ok, err = pcall(function() plan{ stages = 10 }:check(dev) end)
    assert.is_false(ok)
    assert.truthy(err:find("pipeline 'main' needs 246928 bytes of dynamic shared memory (10 stages x 24576 + barriers and slack) but H200 allows 232448 per block (smem_optin; the system reserves 1024 more per block): 14480 bytes over; each stage takes 24592, so at most 9 stages fit", 1, true), err)
    assert.truthy(err:find("pipeline_spec.lua:%d+: cuasync.pipeline:"), err)
    local sm80 = { name = "A100", cc = 80, smem_optin = 166912, max_threads_per_block = 1024 }
    local ok2, err2 = pcall(function()
      cuasync.pipeline{ stages = 2, loads = { plan_map{ dtype = "e4m3", dims = { 256, 256 }, box = { 64, 64 } } },
                        producer = { warps = 1 }, consumer = { warps = 1 } }:check(sm80)
    end)
    assert.is_false(ok2)
    assert.truthy(err2:find("e4m3"), err2)
  end)

  it("rejects bad input naming the field and the rule", function()
    local function refuses(pattern, spec)
      local ok, err = pcall(cuasync.pipeline, spec)
      assert.is_false(ok, pattern)
      assert.truthy(err:find(pattern, 1, true), ("%s\n  got: %s"):format(pattern, err))
      assert.truthy(err:find("cuasync.pipeline", 1, true), err)
    end
    local base = { stages = 2, loads = { A }, producer = { warps = 1 }, consumer = { warps = 1 } }
    local function with(k, v) local s = {} for kk, vv in pairs(base) do s[kk] = vv end s[k] = v return s end
    refuses("argument must be a table", nil)
    refuses("unknown field 'stage'", with("stage", 3))
    refuses("stages must be an integer in 1..64 (got 0)", with("stages", 0))
    refuses("stages must be an integer in 1..64 (got 65)", with("stages", 65))
    refuses("stages must be an integer in 1..64 (got 2.5)", with("stages", 2.5))
    refuses("name must be a C identifier", with("name", "my pipe"))
    refuses("loads must list at least one tensor map", with("loads", {}))
    refuses("loads[1] must be a cuasync.tensormap, { map = tm, name = ..., boxes = n } or { cp_async = bytes, vector = 16 } (got 42)", with("loads", { 42 }))
    refuses("loads[1].map must be a cuasync.tensormap", with("loads", { { map = "x" } }))
    refuses("unknown field 'box'", with("loads", { { map = A, box = 2 } }))
    refuses("loads[1].boxes must be an integer in 1..64", with("loads", { { map = A, boxes = 0 } }))
    refuses("loads[1] and loads[2] are both named 'A'", with("loads", { { map = A, name = "A" }, { map = B, name = "A" } }))
    refuses("give loads or stage_bytes, not both", with("stage_bytes", 1024))
    local nb = with("loads", nil)
    refuses("loads (tensor maps, one box each per stage, or cp.async loads { cp_async = bytes }) or stage_bytes (bulk copies) is required", nb)
    nb.stage_bytes = 1000
    refuses("stage_bytes = 1000 is not a multiple of 16", nb)
    nb.stage_bytes = 2 ^ 20
    refuses("stage_bytes must be an integer in 16..1048575", nb)
    refuses('producer must be "all"', with("producer", "some"))
    refuses("producer.warps must be an integer in 1..32 (got 0)", with("producer", { warps = 0 }))
    refuses("consumer must be { warps = n } or { threads = n }", with("consumer", 4))
    refuses("consumer needs exactly one of warps", with("consumer", { warps = 1, threads = 32 }))
    refuses("the roles need 1056 threads per block", with("consumer", { warps = 32 }))
    refuses("cluster[1] must be an integer in 1..16", with("cluster", { 0 }))
    refuses("cluster {4, 4, 2} has 32 blocks", with("cluster", { 4, 4, 2 }))
    refuses("multicast needs a cluster", with("multicast", { [A] = "x" }))
    local mc = with("cluster", { 2, 1, 1 })
    mc.multicast = { [A] = "w" }
    refuses('multicast[load1] must be "x", "y" or "z"', mc)
    mc.multicast = { [A] = "y" }
    refuses("has extent 1 along y: nothing to share", mc)
    mc.multicast = { [B] = "x" }
    refuses("multicast key", mc)
    local big = { stages = 2, loads = {}, producer = { warps = 1 }, consumer = { warps = 1 } }
    for i = 1, 5 do big.loads[i] = { map = plan_map{ dtype = "f32", dims = { 4096, 4096 }, box = { 256, 256 } }, name = "m" .. i } end
    refuses("tx per stage is 1310720 bytes, more than an mbarrier's tx-count holds", big)
  end)

  it("refuses a mutated plan for programs and pins mutate's own input", function()
    local P = plan()
    assert.error_matches(function() P:mutate{ tx_delta = -1024 }:program{ source = "" } end, "mutated plan")
    assert.error_matches(function() P:mutate{} end, "name a mutation")
    assert.error_matches(function() P:mutate{ tx_delta = 0 } end, "changes nothing")
    assert.error_matches(function() P:mutate{ consumer_arrivals = 4 } end, "the plan's own count")
    assert.error_matches(function() P:mutate{ parity_flip = 1 } end, "parity_flip must be true")
    assert.error_matches(function() P:mutate{ colour = 1 } end, "unknown field 'colour'")
    assert.error_matches(function() P:launch_config{ grid = 4, smem = 10 } end, "smem is filled by the pipeline")
    assert.error_matches(function() P:launch_config{} end, "grid is required")
    assert.same({ grid = 4, block = 160, smem = P.smem_bytes }, P:launch_config{ grid = 4 })
    local PC = plan{ cluster = { 2, 1, 1 }, multicast = { A = "x" } }
    assert.same({ 2, 1, 1 }, PC:launch_config{ grid = 4 }.cluster)
  end)
end)

describe("pipeline release forms", function()
  local function mc(cl, dim, release, prod, cons)
    local box = { 64, 64 / cl[dim == "x" and 1 or 2] }
    return cuasync.pipeline{ stages = 3, loads = { { map = plan_map{ dtype = "f16", dims = { 4096, 4096 }, box = box, swizzle = "128B" }, name = "A" } },
                             multicast = { A = dim }, cluster = cl, producer = prod or { warps = 4 },
                             consumer = cons or { warps = 8 }, release = release }
  end

  it("derives the empty count from the form: per thread, per warp, per warpgroup, times the peer blocks", function()
    assert.same({ 256 * 2, 8 * 2, 2 * 2 }, { mc({ 2, 1, 1 }, "x", "thread").empty_count, mc({ 2, 1, 1 }, "x", "warp").empty_count,
                                            mc({ 2, 1, 1 }, "x", "warpgroup").empty_count })
    assert.equal(2 * 4, mc({ 4, 1, 1 }, "x", "warpgroup").empty_count)
    assert.equal(2 * 2, mc({ 2, 2, 1 }, "y", "warpgroup").empty_count)   -- the line along y: 2 blocks
    assert.equal("warp", mc({ 2, 1, 1 }, "x").roles.release)            -- warps: warp by default
    assert.equal("thread", plan{ consumer = { threads = 64 } }.roles.release)
    local P = mc({ 2, 1, 1 }, "x", "warpgroup")
    assert.truthy(P:header():find("static constexpr int release = 2;", 1, true))
    assert.truthy(P:header():find("static constexpr unsigned empty_count = 4u;", 1, true))
    local e = P:explain()
    assert.truthy(e:find('empty: 4 arrivals (release = "warpgroup": one lane of each of 2 consumer warpgroups', 1, true), e)
    assert.truthy(e:find("from each of the 2 blocks whose copies land here (lane k of the releasing warpgroup's warps arrives on the k-th of them, in parallel)", 1, true), e)
  end)

  it("refuses a release form the roles cannot serve, naming the rule", function()
    assert.error_matches(function() plan{ release = "block" } end, 'release must be "thread", "warp" or "warpgroup" %(got "block"%)')
    assert.error_matches(function() plan{ consumer = { threads = 64 }, release = "warp" } end,
      'release = "warp" needs consumer = { warps = n }')
    assert.error_matches(function() plan{ producer = { warps = 4 }, consumer = { warps = 6 }, release = "warpgroup" } end,
      "needs consumer warps in whole warpgroups %(a multiple of 4; got 6%)")
    assert.error_matches(function() plan{ producer = { warps = 1 }, consumer = { warps = 4 }, release = "warpgroup" } end,
      "needs producer warps in whole warpgroups %(a multiple of 4; got 1%)")
    assert.has_no.errors(function() plan{ producer = "all", consumer = { warps = 4 }, release = "warpgroup" } end)
  end)

  it("runs each form through the protocol checker, clusters of 2 and 4 along x and y, and finds a missing arrival", function()
    local n = 0
    for _, shape in ipairs({ { { 2, 1, 1 }, "x" }, { { 4, 1, 1 }, "x" }, { { 1, 2, 1 }, "y" }, { { 2, 2, 1 }, "y" } }) do
      for _, release in ipairs({ "thread", "warp", "warpgroup" }) do
        local P = mc(shape[1], shape[2], release, { warps = 4 }, release == "thread" and { threads = 8 } or { warps = 8 })
        local r = P:simulate{ iterations = 7, seed = n + 1, runs = 3 }
        assert.is_true(r.ok, release .. ": " .. tostring(r))
        local bad = P:mutate{ consumer_arrivals = P.roles.arrivals - 1 }:simulate{ iterations = 7, seed = 2, runs = 3 }
        assert.is_false(bad.ok, release)
        assert.equal("empty", bad.which, release .. ": " .. tostring(bad))
        n = n + 1
      end
    end
    assert.equal(12, n)
  end)
end)

describe("protocol checker", function()
  it("simulates >= 24 valid plans to completion (stages 1..8 x unified/partitioned x cluster 1/2)", function()
    local n = 0
    for stages = 1, 8 do
      for _, prod in ipairs({ "all", { warps = 1 } }) do
        for _, cl in ipairs({ false, true }) do
          local P = plan{ stages = stages, producer = prod, consumer = { warps = 2 },
                          cluster = cl and { 2, 1, 1 } or nil, multicast = cl and { A = "x" } or nil }
          local r = P:simulate{ iterations = 2 * stages + 3, seed = stages, runs = 6 }
          assert.is_true(r.ok, tostring(r))
          n = n + 1
        end
      end
    end
    assert.equal(32, n)
  end)

  it("explores every interleaving of a small plan", function()
    local P = cuasync.pipeline{ stages = 2, stage_bytes = 1024, producer = { warps = 1 }, consumer = { threads = 1 } }
    local r = P:simulate{ iterations = 3, explore = "exhaustive", bound = 30000 }
    assert.is_true(r.ok, tostring(r))
    assert.is_true(r.exhausted)
    assert.truthy(r.runs > 10)
  end)

  local MUTATIONS = {
    { { tx_delta = -1024 }, "deadlock", "full", "tx %-1024" },
    { { tx_delta = 512 }, "deadlock", "full", "tx 512" },
    { { consumer_arrivals = 1 }, "deadlock", "empty", "pending 1 of 2" },
    { { consumer_arrivals = 3 }, "over_arrival", "empty", "more arrivals per phase than its count 2" },
    { { parity_flip = true }, "parity_aliasing", "full", "the parity names" },
    { { producer_exits_at = 5 }, "deadlock", "full", "got no arrival in phase 1" },
  }
  for _, prod in ipairs({ "all", { warps = 1 } }) do
    for _, cl in ipairs({ false, true }) do
      it(("finds each planted fault, naming the barrier and stage (%s, cluster %s)"):format(
           prod == "all" and "unified" or "partitioned", cl and 2 or 1), function()
        local P = plan{ stages = 3, producer = prod, consumer = { warps = 2 }, cluster = cl and { 2, 1, 1 } or nil }
        for _, m in ipairs(MUTATIONS) do
          local mut, kind, which, text = m[1], m[2], m[3], m[4]
          local r = P:mutate(mut):simulate{ iterations = 12, seed = 3, runs = 10 }
          local label = next(mut)
          assert.is_false(r.ok, label)
          assert.equal(kind, r.kind, label .. ": " .. tostring(r))
          assert.equal(which, r.which, label .. ": " .. tostring(r))
          assert.is_number(r.stage)
          assert.truthy(r.message:find(text), label .. ": " .. r.message)
          if label == "producer_exits_at" then assert.equal(5 % 3, r.stage) end
          if label == "tx_delta" then assert.equal(0, r.stage) end
          local rep = r:report()
          assert.truthy(rep:find("timeline:", 1, true) and rep:find("barriers:", 1, true))
        end
      end)
    end
  end

  it("runs hand-written roles: a missing arrival deadlocks, a double arrival over-arrives", function()
    local function roles(extra)
      return {
        barriers = { done = 2 },
        roles = {
          worker = { function(t) t:arrive(t.bar.done) end, n = extra },
          waiter = function(t) t:wait_parity(t.bar.done, 0) end,
        },
        explore = "exhaustive",
      }
    end
    local r = cuasync.model.run(roles(2))
    assert.is_true(r.ok, tostring(r))
    assert.is_true(r.exhausted)
    r = cuasync.model.run(roles(1))
    assert.equal("deadlock", r.kind)
    assert.equal("done", r.barrier)
    assert.truthy(r:report():find("blocked: waits on done for parity 0 (phase 0, pending 1 of 2, tx 0)", 1, true), r:report())
    r = cuasync.model.run{ barriers = { b = 1 }, roles = { w = function(t) t:arrive(t.bar.b, 2) end } }
    assert.equal("over_arrival", r.kind)
    r = cuasync.model.run{ barriers = { b = 1 }, roles = { w = function(t) t:expect_tx(t.bar.b, 2 ^ 20 - 1); t:expect_tx(t.bar.b, 1) end } }
    assert.equal("tx_overflow", r.kind)
    r = cuasync.model.run{ barriers = { b = 1 }, roles = { w = function(t) t:bulk(64, t.bar.b); t:arrive_expect_tx(t.bar.b, 64) end,
                                                          v = function(t) t:wait_parity(t.bar.b, 0) end },
                           async = { pieces = 2 }, runs = 50 }
    assert.is_true(r.ok, tostring(r))
    r = cuasync.model.run{ barriers = { b = 1 }, roles = { w = function() error("boom") end } }
    assert.equal("error", r.kind)
    assert.truthy(r.message:find("boom", 1, true))
  end)

  it("hands each step's result back to its role (tokens wait on their phase)", function()
    local r = cuasync.model.run{
      barriers = { b = 2 },
      roles = {
        a = function(t) local tok = t:arrive(t.bar.b); t:wait(t.bar.b, tok) end,
        c = function(t) t:arrive(t.bar.b) end,
      },
      explore = "exhaustive",
    }
    assert.is_true(r.ok, tostring(r))
    assert.is_true(r.exhausted)
    r = cuasync.model.run{ barriers = { b = 1, c = 1 }, roles = { a = function(t) t:wait(t.bar.b, t:arrive(t.bar.c)) end } }
    assert.equal("error", r.kind)
    assert.truthy(r.message:find("needs a token from that barrier's arrive", 1, true), r.message)
  end)

  it("finds parity aliasing when a waiter is overtaken by two phases", function()
    local r = cuasync.model.run{
      barriers = { b = 1 },
      roles = {
        fast = function(t) for _ = 1, 3 do t:arrive(t.bar.b) end end,
        slow = function(t) t:wait_parity(t.bar.b, 0, 0); t:wait_parity(t.bar.b, 1, 1); t:wait_parity(t.bar.b, 0, 2) end,
      },
      explore = "exhaustive",
    }
    assert.equal("parity_aliasing", r.kind, tostring(r))
    assert.equal("b", r.barrier)
  end)

  it("rejects bad input to model.run", function()
    assert.error_matches(function() cuasync.model.run(nil) end, "cuasync.model.run: argument must be a table")
    assert.error_matches(function() cuasync.model.run{ barriers = {}, roles = {} } end, "at least one barrier")
    assert.error_matches(function() cuasync.model.run{ barriers = { b = 0 }, roles = {} } end, "barriers.b %(an arrival count%) must be an integer in 1..1048575")
    assert.error_matches(function() cuasync.model.run{ barriers = { b = 1 }, roles = { x = 3 } } end, "roles.x must be a function")
    assert.error_matches(function() cuasync.model.run{ barriers = { b = 1 }, roles = { x = function() end }, explore = "dfs" } end,
      'explore must be "random" or "exhaustive"')
    assert.error_matches(function() cuasync.model.run{ barriers = { b = 1 }, roles = { x = function() end }, runs = 0 } end,
      "runs must be an integer")
    assert.error_matches(function() plan():simulate{ iterations = 1000, runs = 1000 } end,
      "cuasync.pipeline.simulate: iterations x runs x roles = 1000 x 1000 x 5 exceeds 250000 simulated iterations per call")
    assert.error_matches(function() plan():simulate{ iterations = 0 } end, "iterations must be an integer in 1..250000")
    assert.error_matches(function() plan():simulate{ seeds = 1 } end, "unknown field 'seeds'")
    local r = cuasync.model.run{ barriers = { b = 1 }, roles = { x = function(t) t:arrive("b") end } }
    assert.equal("error", r.kind)
    assert.truthy(r.message:find("not a barrier of this run", 1, true))
  end)
end)

describe("pipeline kernels", function()
  local gpu_it = H.gpu_it(it, pending)

  -- the copy kernel for a plan; the matrix a whole number of boxes
  local W, Hh, BX, BY = 1024, 384, 64, 32
  local function tma_kernel(tm, stages, prod, cons)
    local P = cuasync.pipeline{ name = "tma", stages = stages, loads = { { map = tm, name = "in" } }, producer = prod,
                                consumer = cons }
    local k = P:program{ file = "pipeline_tma.cu", defines = { BOX_X = BX, BOX_Y = BY } }:compile():kernel(
      "pipeline_tma", "tensormap, ptr, u32, u32, u32")
    return P, k
  end

  gpu_it("copy fresh random data through plans of 1..8 stages, both role forms", function()
    local bytes = W * Hh * 4
    local src, host = H.random_words(W * Hh)
    local dst = cuasync.alloc(bytes)
    local tm = cuasync.tensormap{ buffer = src, dtype = "f32", dims = { W, Hh }, box = { BX, BY } }
    local tiles_x, tiles = W / BX, (W / BX) * (Hh / BY)
    local got = ffi.new("uint32_t[?]", W * Hh)
    local runs = 0
    for _, stages in ipairs({ 1, 2, 3, 5, 8 }) do
      for _, roles in ipairs({ { "all", { warps = 4 } }, { { warps = 1 }, { warps = 4 } }, { { warps = 1 }, { threads = 96 } } }) do
        local P, k = tma_kernel(tm, stages, roles[1], roles[2])
        P:check(cuasync.device(0))
        for _, grid in ipairs({ 7, tiles + 3 }) do   -- several tiles per block; idle blocks
          dst:fill(0xA5)
          k:launch(P:launch_config{ grid = grid }, tm, dst, W, tiles_x, tiles)
          cuasync.synchronize()
          dst:download_to(got, bytes)
          assert.equal(0, ffi.C.memcmp(got, host, bytes), ("stages %d block %d grid %d"):format(stages, P.block, grid))
          runs = runs + 1
        end
      end
    end
    assert.equal(30, runs)
    src:close(); dst:close()
  end)

  gpu_it("refuses a tensor map or launch that does not match the plan, before the launch", function()
    local src = cuasync.alloc(W * Hh * 4)
    local dst = cuasync.alloc(W * Hh * 4)
    local tm = cuasync.tensormap{ buffer = src, dtype = "f32", dims = { W, Hh }, box = { BX, BY } }
    local half = cuasync.tensormap{ buffer = src, dtype = "f32", dims = { W, Hh }, box = { BX, BY / 2 } }
    local P, k = tma_kernel(tm, 2, { warps = 1 }, { warps = 4 })
    local ok, err = pcall(function() k:launch(P:launch_config{ grid = 1 }, half, dst, W, 1, 1) end)
    assert.is_false(ok)
    assert.truthy(err:find("tensormap argument 1 brings 4096 bytes per box of f32; pipeline 'tma' was built for 8192 of f32 (load in, stage tx 8192)", 1, true), err)
    assert.truthy(err:find("pipeline_spec.lua:%d+:"), err)
    ok, err = pcall(function() k:launch(P:launch_config{ grid = 1 }, tm.map, dst, W, 1, 1) end)
    assert.truthy(err:find("is a raw CUtensorMap", 1, true), err)
    local unencoded = cuasync.tensormap{ buffer = src, dtype = "f32", dims = { W, Hh }, box = { BX, BY }, encode = false }
    ok, err = pcall(function() k:launch(P:launch_config{ grid = 1 }, unencoded, dst, W, 1, 1) end)
    assert.truthy(err:find("argument 1 (tensormap) was built with encode = false", 1, true), err)
    ok, err = pcall(function() k:launch({ grid = 1, block = 128, smem = P.smem_bytes }, tm, dst, W, 1, 1) end)
    assert.truthy(err:find("launches 128 threads per block but pipeline 'tma' has roles for 160", 1, true), err)
    ok, err = pcall(function() k:launch({ grid = 1, block = 160, smem = 1024 }, tm, dst, W, 1, 1) end)
    assert.truthy(err:find("launches with 1024 bytes of dynamic shared memory but pipeline 'tma' lays out", 1, true), err)
    -- the matching map launches (checked once per map, not per launch)
    local run = k:prepare(P:launch_config{ grid = 4 }, tm, dst, W, W / BX, (W / BX) * (Hh / BY))
    run(); run()
    cuasync.synchronize()
    src:close(); dst:close()
  end)

  gpu_it("multicasts a tile to every block of a cluster, each release form, clusters of 2 and 4 along x and y", function()
    local MBX, MBY, TILES = 64, 32, 40
    local rows = MBY * TILES
    local src, host = H.random_words(MBX * rows)
    local plane = MBX * rows
    local dst = cuasync.alloc(plane * 4 * 4)
    local ROLES = { thread = { { warps = 1 }, { threads = 64 } }, warp = { { warps = 1 }, { warps = 2 } },
                    warpgroup = { { warps = 4 }, { warps = 8 } } }
    local runs = 0
    for _, shape in ipairs({ { { 2, 1, 1 }, "x" }, { { 4, 1, 1 }, "x" }, { { 1, 2, 1 }, "y" }, { { 2, 2, 1 }, "y" } }) do
      local cl, dim = shape[1], shape[2]
      local size = cl[1] * cl[2]
      local tm = cuasync.tensormap{ buffer = src, dtype = "f32", dims = { MBX, rows }, box = { MBX, MBY / cl[dim == "x" and 1 or 2] } }
      for _, release in ipairs({ "thread", "warp", "warpgroup" }) do
        for _, stages in ipairs({ 1, 3 }) do
          local P = cuasync.pipeline{ name = "mc", stages = stages, loads = { { map = tm, name = "a" } }, multicast = { a = dim },
                                      cluster = cl, producer = ROLES[release][1], consumer = ROLES[release][2], release = release }
          assert.equal(MBX * MBY * 4, P.tx_bytes)
          local k = P:program{ file = "pipeline_multicast.cu", defines = { BOX_X = MBX, BOX_Y = MBY } }:compile():kernel(
            "pipeline_multicast", "tensormap, ptr, u32, u64")
          for _, clusters in ipairs({ 3, TILES + 2 }) do
            local label = ("cluster {%d,%d,%d} multicast %s, release %s, %d stages, %d clusters"):format(cl[1], cl[2], cl[3],
              dim, release, stages, clusters)
            dst:fill(0xA5)
            k:launch(P:launch_config{ grid = { cl[1] * clusters, cl[2], 1 } }, tm, dst, TILES, plane)
            cuasync.synchronize()
            local got = dst:download("uint32_t", plane * 4)
            for r = 0, size - 1 do
              assert.equal(0, ffi.C.memcmp(got + r * plane, host, plane * 4), ("%s: block rank %d"):format(label, r))
            end
            for r = size, 3 do assert.equal(0xA5A5A5A5, got[r * plane], label .. ": wrote past the cluster's planes") end
            runs = runs + 1
          end
        end
      end
    end
    assert.equal(48, runs)
    src:close(); dst:close()
  end)
end)
