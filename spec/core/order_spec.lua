-- A plan's ordered barrier (cuasync.pipeline{ order = {...} }): its derivation (counts, offsets,
-- layout, Config), its refusals before any compile, its protocol in the checker (groups taking
-- turns, strict alternation, planted faults found and named as the watchdog names them), the
-- hang message from a record, NVRTC compiles (and no change to a plan without an order); on the
-- GPU, kernels-src/order_log.cu's groups append to a shared log in strict alternation, and a
-- group that skips its pass is a hang naming the ordered barrier, the group and the round.
local bit = require("bit")
local cuasync = require("cuasync")
local H = require("helper")
local fs = require("cuasync.fs")
local hang = require("cuasync.hang")

local function plan(order, extra)
  local s = { name = "pingpong", stages = 2, stage_bytes = 1024, producer = { warps = 4 }, consumer = { warps = 8 },
              order = order == nil and { name = "math", groups = 2, depth = 2 } or order or nil, scratch = 4096 }
  for k, v in pairs(extra or {}) do s[k] = v end
  return cuasync.pipeline(s)
end

describe("pipeline order", function()
  it("derives counts, offsets and phases, after empty[] in the layout and in the Config", function()
    local P = plan()
    assert.same({ name = "math", groups = 2, depth = 2, arrive = "warp", consume = "alternate", group_warps = 4,
                  group_threads = 128, count = 4, barriers = 4, offset = 2080, bytes = 32 }, P.order)
    assert.equal(4, P.empty_count)    -- one group's releases: a stage is read by one group
    local L = P:layout()
    assert.same({ name = "math[0][0]", offset = 2080, bytes = 8, align = 8 }, L[7])
    assert.same({ name = "math[1][1]", offset = 2104, bytes = 8, align = 8 }, L[10])
    assert.equal("scratch", L[11].name)
    local h = P:header()
    for _, line in ipairs({ "order_groups = 2u, order_depth = 2u;", "order_offset = 2080u, order_count = 4u;",
                            "order_arrive = 1;", "order_group_warps = 4u;", "order_alternate = true;",
                            "order_progress = 3u;", "progress_words = 7u;", "order_role = 3u;" }) do
      assert.truthy(h:find(line, 1, true), line)
    end
    assert.truthy(P:explain():find("order 'math': 2 groups of 4 consumer warps (a warpgroup each) take turns through 2 stages; math[0..1][0..1] at 2080, 4 arrivals each", 1, true))
    -- empty counts one group's releases, and says so (4 warps, not the 8 consumer warps)
    assert.truthy(P:explain():find('empty: 4 arrivals (release = "warp": one lane of each of 4 consumer warps, one group\'s of 2: with order.consume = "alternate" a stage is read by one group)', 1, true), P:explain())
    assert.equal(3, require("cuasync.model.order_plan").ROLE)   -- the Config's order_role, the watchdog's role
    assert.truthy(require("cuasync.hang").ROLES[3] == "consumer group")
    local T = plan({ groups = 2, arrive = "thread", consume = "all" }, { consumer = { warps = 16 } })
    assert.same({ 1, 256, 16 }, { T.order.depth, T.order.count, T.empty_count })
    assert.truthy(T:explain():find('empty: 16 arrivals (release = "warp": one lane of each of 16 consumer warps)', 1, true), T:explain())
    local W = plan({ groups = 2 }, { release = "warpgroup", consumer = { warps = 16 } })
    assert.truthy(W:explain():find('empty: 2 arrivals (release = "warpgroup": one lane of each of 2 consumer warpgroups, one group\'s of 2', 1, true), W:explain())
    assert.equal("order", T.order.name)
    P:check("sm_90a")
  end)

  it("leaves a plan without an order as it was: no member, no barrier, the same PTX", function()
    local Q = cuasync.pipeline{ name = "pingpong", stages = 2, stage_bytes = 1024, producer = { warps = 1 }, consumer = { warps = 8 } }
    assert.is_nil(Q.order)
    assert.falsy(Q:header():find("order", 1, true))
    assert.equal(8, Q.empty_count)
    -- the device headers without order.cuh's hook compile the same PTX for plans without an order
    local dir = H.tmpdir()
    local src = cuasync.kernels_dir()
    assert(fs.mkdirs(dir .. "/k/cuasync"))
    for _, n in ipairs(assert(fs.list(src, ".cu"))) do assert(fs.write(dir .. "/k/" .. n, assert(fs.read(src .. "/" .. n)))) end
    for _, n in ipairs(assert(fs.list(src .. "/cuasync", ".cuh"))) do
      local kept = {}
      for line in (assert(fs.read(src .. "/cuasync/" .. n)) .. "\n"):gmatch("([^\n]*)\n") do
        if not (line:find("#include <cuasync/order.cuh>", 1, true) or line:find("order_init<Config>(this->base)", 1, true)) then
          kept[#kept + 1] = line
        end
      end
      assert(fs.write(dir .. "/k/cuasync/" .. n, n == "order.cuh" and "#pragma once\n" or table.concat(kept, "\n")))
    end
    local code = [[
      local cuasync = require("cuasync")
      local fs = require("cuasync.fs")
      local function m(box) return cuasync.tensormap{ ptr = 2 ^ 20, bytes = 2 ^ 26, encode = false, dtype = "f32", dims = { 4096, 4096 }, box = box } end
      for _, wd in ipairs({ true, false }) do
        print(fs.sha256(cuasync.pipeline{ name = "tma", stages = 3, loads = { { map = m{ 64, 32 }, name = "in" } }, producer = { warps = 1 },
          consumer = { warps = 4 } }:program{ file = "pipeline_tma.cu", arch = "sm_90a", watchdog = wd, defines = { BOX_X = 64, BOX_Y = 32 } }:ptx()))
      end
      print(fs.sha256(require("cuasync.kernels.gemm").program({ stages = 4, bm = 128, bn = 128, m = 1024, n = 1024, k = 1024 }, { arch = "sm_90a" }):ptx()))
    ]]
    local ok, now = H.luajit(code, { CUASYNC_CACHE_DIR = dir .. "/c1" }, 300)
    assert.is_true(ok, now)
    local ok2, before = H.luajit(code, { CUASYNC_CACHE_DIR = dir .. "/c2", CUASYNC_KERNELS = dir .. "/k" }, 300)
    assert.is_true(ok2, before)
    assert.equal(3, select(2, now:gsub("%x+\n", "")), now)
    assert.equal(before, now)
  end)

  it("refuses an order the block cannot hold, naming the field and the rule, before any compile", function()
    local function refuses(text, order, extra)
      local ok, err = pcall(plan, order, extra)
      assert.is_false(ok, text)
      assert.truthy(tostring(err):find("cuasync.pipeline: " .. text, 1, true), ("%s\n  got: %s"):format(text, tostring(err)))
    end
    refuses("order must be a table { groups = n, depth = d, name = s } (got 2)", 2)
    refuses("order.groups = 1: an ordered barrier needs at least 2 groups to take turns", { groups = 1 })
    refuses("order.groups must be an integer, the consumer groups that take turns (got nil)", { depth = 2 })
    refuses("order.groups = 3 needs 3 consumer warpgroups; consumer = { warps = 8 } holds 2", { groups = 3 })
    refuses("order.groups = 2 must divide the 3 consumer warpgroups evenly (every group the same size)", { groups = 2 },
            { consumer = { warps = 12 } })
    refuses("order needs consumer warps in whole warpgroups (a multiple of 4 warps: a group is one or more warpgroups; got 192 consumer threads)",
            { groups = 2 }, { consumer = { warps = 6 } })
    refuses("order.depth must be a positive integer, the turns of a group's round (got 0)", { groups = 2, depth = 0 })
    refuses("order.depth must be an integer in 1..16 (got 17)", { groups = 2, depth = 17 })
    refuses('order.arrive must be "warp" (one lane of each warp passes the turn) or "thread" (every thread does) (got "lane")',
            { groups = 2, arrive = "lane" })
    refuses('order.consume must be "alternate"', { groups = 2, consume = "some" })
    refuses("unknown field 'group' in order", { group = 2 })
    refuses("order.name must be an identifier of at most 32 characters", { groups = 2, name = "my order" })
    refuses('order needs producer warps (producer = { warps = n }): with producer = "all"', { groups = 2 }, { producer = "all" })
    -- a group must be hardware warpgroups: consumer warps start at a multiple of 4
    for _, w in ipairs({ 1, 2, 3, 5 }) do
      refuses(("order needs producer warps in whole warpgroups (producer = { warps = n }, a multiple of 4; got %d), so that each group's warpgroups are hardware warpgroups"):format(w),
              { groups = 2 }, { producer = { warps = w } })
    end
    assert.equal(2, plan(nil, { producer = { warps = 8 } }).order.groups)   -- two producer warpgroups: aligned
    local ok, err = pcall(cuasync.pipeline, { name = "cp", stages = 2, loads = { { cp_async = 4096, vector = 16, name = "x" } },
      producer = { warps = 1 }, consumer = { warps = 8 }, order = { groups = 2 } })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("cuasync.pipeline: order is for TMA/bulk plans; a cp.async plan's consumers do not take turns", 1, true), tostring(err))
  end)
end)

describe("pipeline order protocol", function()
  it("runs groups taking turns to completion over random interleavings: forms, depths, groups, clusters", function()
    local n = 0
    for _, c in ipairs({
      { {}, {} }, { { depth = 3 }, {} }, { { groups = 4, depth = 2 }, { consumer = { warps = 16 } } },
      { { groups = 2, arrive = "thread" }, { release = "thread" } }, { { groups = 2, consume = "all", depth = 2 }, {} },
      { { groups = 2, depth = 2 }, { release = "warpgroup", producer = { warps = 4 } } },
      { { groups = 2, depth = 2 }, { cluster = { 2, 1, 1 } } }, { { groups = 2 }, { stages = 1 } },
    }) do
      local o = c[1]
      o.groups = o.groups or 2
      local P = plan(o, c[2])
      for _, tile in ipairs({ 1, 3 }) do
        local r = P:simulate{ iterations = 10, tile_iterations = tile, runs = 20, seed = 5 }
        assert.is_true(r.ok, r:report())
        n = n + 1
      end
    end
    assert.equal(16, n)
    local small = plan({ groups = 2 }, { stages = 1, release = "warpgroup", producer = { warps = 4 } })
    local r = small:simulate{ iterations = 2, tile_iterations = 1, explore = "exhaustive", bound = 40000 }
    assert.is_true(r.ok and r.complete, r:report())
  end)

  it("finds each planted fault and names it as the watchdog would", function()
    local P = plan()
    local function fault(m) return P:mutate(m):simulate{ iterations = 12, runs = 50 } end
    local r = fault{ skip_pass = 0 }
    assert.same({ false, "deadlock", "math", 0, 1, 0 }, { r.ok, r.kind, r.order_name, r.stage, r.group, r.round })
    assert.equal("math[0][1] of ordered barrier 'math' (stage 0, group 1, round 0, phase 0, parity 0): it waits for group 0's pass of its round 0 turn at stage 0", r.at)
    assert.truthy(r:report():find("  at math[0][1] of ordered barrier 'math'", 1, true), r:report())
    r = fault{ skip_pass = 1 }
    assert.equal("math[0][0] of ordered barrier 'math' (stage 0, group 0, round 1, phase 0, parity 0): it waits for group 1's pass of its round 0 turn at stage 0", r.at)
    r = fault{ order_count = 3 }   -- too few: the next group enters while this one is still in
    assert.same({ "order", "math" }, { r.kind, r.order_name })
    assert.truthy(r.message:find("group 1 (round 0) entered its turn at math[0] while group 0 (round 0) is still in its own there", 1, true), r.message)
    r = fault{ order_count = 5 }   -- too many: the next group never enters
    assert.same({ "deadlock", 1, 0 }, { r.kind, r.group, r.round })
    r = fault{ turn_parity_flip = 0 }
    assert.equal("math[0][0] of ordered barrier 'math' (stage 0, group 0, round 0, phase -1, parity 0): it waits for parity 0, but round 0's wait is for parity 1 (a parity off by one)", r.at)
    r = fault{ turn_parity_flip = 1 }
    assert.same({ "parity_aliasing", "math[0][1]", 1 }, { r.kind, r.barrier_name, r.group })
    local C = plan(nil, { cluster = { 2, 1, 1 } }):mutate{ skip_pass = 0 }:simulate{ iterations = 12, runs = 20 }
    assert.truthy(C.at:find("math[0][1] of ordered barrier 'math' (cluster rank ", 1, true), C.at)
  end)

  it("walks each group's pipeline state past the other groups' tiles (ordered<>::first, skip_others); without the skip it reads another tile", function()
    local orders = require("cuasync.model.order_plan")
    local o = plan({ groups = 4, depth = 2 }, { consumer = { warps = 16 } }).order
    assert.same({ 0, 6, 9, 9 }, { orders.first(o, 0, 3), orders.first(o, 2, 3), orders.first(o, 3, 3), orders.skip(o, 3) })
    local all = plan({ groups = 2, consume = "all" }).order
    assert.same({ 0, 0 }, { orders.first(all, 1, 3), orders.skip(all, 3) })
    -- a group that does not skip waits on a stage of another group's tile (refilled: parity
    -- aliasing) or releases it a second time (an over-arrival on empty): each found, each seed
    for _, c in ipairs({ { 2, 1 }, { 2, 2 }, { 3, 3 }, { 4, 1 } }) do
      local P = plan(nil, { stages = c[1] })
      for g = 0, 1 do
        for seed = 1, 3 do
          local r = P:mutate{ no_skip = g }:simulate{ iterations = 12, tile_iterations = c[2], runs = 50, seed = seed }
          assert.is_false(r.ok, ("stages %d tile %d group %d seed %d"):format(c[1], c[2], g, seed))
          assert.truthy((r.kind == "parity_aliasing" and r.which == "full") or (r.kind == "over_arrival" and r.which == "empty"),
                        r:report())
        end
      end
    end
    assert.error_matches(function() plan({ groups = 2, consume = "all" }):mutate{ no_skip = 0 } end,
      'no_skip is a fault of orders with consume = "alternate" (pipeline \'pingpong\' has consume = "all": no group skips an iteration)', nil, true)
    assert.error_matches(function() plan():mutate{ no_skip = 2 } end, "no_skip (a group) must be an integer in 0..1 (got 2)", nil, true)
  end)

  it("pins mutate's and simulate's refusals for orders", function()
    local P, Q = plan(), plan(false)
    assert.error_matches(function() Q:mutate{ skip_pass = 0 } end, "skip_pass is a fault of plans with an order; pipeline 'pingpong' has none", nil, true)
    assert.error_matches(function() P:mutate{ skip_pass = 2 } end, "skip_pass (a group) must be an integer in 0..1 (got 2)", nil, true)
    assert.error_matches(function() P:mutate{ order_count = 4 } end, "order_count = 4 is the plan's own count", nil, true)
    assert.error_matches(function() P:mutate{ consumer_arrivals = 2 } end, "consumer_arrivals is not modelled for pipeline 'pingpong', which has an order", nil, true)
    assert.error_matches(function() Q:simulate{ tile_iterations = 2 } end, "tile_iterations is for plans with an order; pipeline 'pingpong' has none", nil, true)
    assert.error_matches(function() P:simulate{ tile_iterations = 0 } end, "tile_iterations must be an integer in 1..1048576 (got 0)", nil, true)
  end)

  it("checks hand-written turns in model.run: two groups in one turn is an order fault", function()
    local r = cuasync.model.run{ barriers = { b = 1 }, roles = {
      a = function(t) t:turn("s", 0, 0, 1, 2); t:arrive(t.bar.b); t:turn_end("s") end,
      c = function(t) t:wait_parity(t.bar.b, 0); t:turn("s", 1, 0, 1, 2); t:turn_end("s") end } }
    assert.same({ false, "order" }, { r.ok, r.kind })
    assert.truthy(r.message:find("group 1 (round 0) entered its turn at s while group 0 (round 0) is still in its own there", 1, true), r.message)
    r = cuasync.model.run{ barriers = { b = 1 }, roles = { a = function(t) t:turn("s", 1, 0, 1, 2) end } }
    assert.truthy(r.message:find("out of order: 0 turns were taken there, so group 0's round 0 comes next", 1, true), r.message)
    r = cuasync.model.run{ barriers = { b = 1 }, roles = { a = function(t) t:turn("s", -1, 0, 1, 2) end } }
    assert.same({ "error", "a: turn's group must be a non-negative integer (got -1)" }, { r.kind, r.message })
  end)

  it("names a hung wait for a turn from the watchdog's record, and its likely cause", function()
    local P = plan()
    local mod = { name = "m", program = { hooks = { plan = P } }, watch = { last = "order_log" } }
    local function rec(d, g, iteration, parity, received)
      return { block = { [0] = 0, 0, 0 }, cluster_rank = 0, warp = 5, lane = 0, role = 3, stage = d, parity = parity,
               iteration = iteration, bar = 0x400 + P.order.offset + 8 * (d * 2 + g), base = 0x400, phase_parity = 2,
               received = received, armed = 0xFFFFFFFF, waited_ns = 2e9, timeout_ns = 2e9 }
    end
    local e = hang.error_from(rec(0, 1, 0, 0, 0), mod, true)
    assert.equal("cuasync.watchdog: kernel 'order_log' hung: block (0,0,0) warp 5 (consumer group 1) waited 2000 ms on math[0][1] of ordered barrier 'math' (stage 0, group 1, round 0, phase 0, parity 0); math[0][1] has received 0 of the 4 arrivals of phase 0 (group 0 passing its round 0 turn at stage 0)", tostring(e))
    assert.same({ "math", 1, 0, "math[0][1]" }, { e.order, e.group, e.round, e.barrier })
    assert.truthy(e:explain():find("likely cause: a pass missing: group 0's round 0 turn at stage 0 brought 0 of the 4 arrivals", 1, true), e:explain())
    e = hang.error_from(rec(0, 0, 2, 1, 4), mod, true)
    assert.truthy(e:explain():find("a parity off by one: group 0's round 1 waits at stage 0 for parity 0", 1, true), e:explain())
  end)

  it("compiles order_log.cu under NVRTC (watched, plain, traced, planted) and refuses ordered<> on a plan without one", function()
    local P = plan()
    for _, o in ipairs({ {}, { watchdog = false }, { trace = true }, { defines = { ORDER_SKIP_PASS = 0 } },
                         { trace = true, defines = { ORDER_SKIP_PASS = 0, ORDER_SKIP_TURN = 1 } } }) do
      o.file, o.arch = "order_log.cu", "sm_90a"
      local ptx = P:program(o):ptx()
      assert.truthy(ptx:find("mbarrier.try_wait.parity", 1, true))
    end
    local Q = cuasync.pipeline{ name = "plain", stages = 2, stage_bytes = 1024, producer = { warps = 1 }, consumer = { warps = 8 } }
    local ok, err = pcall(function()
      return Q:program{ source = "#include <cuasync/pipelines/plain.cuh>\nextern \"C\" __global__ void k() { cuasync::pipeline<cuasync::pipelines::plain> p; cuasync::ordered<cuasync::pipelines::plain> o(p, 0u); (void)o; }", arch = "sm_90a" }:ptx()
    end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("cuasync: ordered<Config> needs a plan with order = { groups = n, ... }", 1, true), tostring(err))
  end)
end)

describe("pipeline order kernels", function()
  local gpu_it = H.gpu_it(it, pending)

  local function run(groups, tiles, k_tiles, defines, watchdog)
    local P = plan({ name = "math", groups = groups, depth = 2 }, { consumer = { warps = 4 * groups } })
    P:check(cuasync.device(0))
    local k = P:program{ file = "order_log.cu", defines = defines, watchdog = watchdog }:compile()
      :kernel("order_log", "ptr, ptr, ptr, u32, u32")
    local chunk = P.tx_bytes / 4
    local n = tiles * k_tiles * chunk
    local src, host = H.random_words(n)
    local sums, logs = cuasync.alloc(4 * tiles), cuasync.alloc(P.scratch_bytes)
    sums:fill(0)
    k:launch(P:launch_config{ grid = 1 }, src, sums, logs, tiles, k_tiles)
    return P, { src = src, host = host, sums = sums, logs = logs, chunk = chunk }
  end

  gpu_it("two and four consumer warpgroups append to a shared log in strict alternation; their sums are right", function()
    for _, c in ipairs({ { 2, 9, 3 }, { 4, 10, 2 }, { 2, 1, 5 } }) do
      local groups, tiles, k_tiles = c[1], c[2], c[3]
      local P, o = run(groups, tiles, k_tiles)
      cuasync.synchronize()
      local w = 4   -- warps per group: a start and an end mark from each, every turn
      local cap = (P.scratch_bytes / 4 - 2) / 2
      local got = o.logs:download("uint32_t", 2 + 2 * cap)
      for d = 0, 1 do
        assert.equal(tiles * 2 * w, got[d], ("stage %d's log length"):format(d))
        for t = 0, tiles - 1 do   -- the turn's 2 w entries are its group's (a warp's end may precede another's start)
          local ends = 0
          for j = 0, 2 * w - 1 do
            local e = got[2 + d * cap + t * 2 * w + j]
            local where = ("groups %d stage %d tile %d entry %d: 0x%x"):format(groups, d, t, j, e)
            assert.equal(t % groups, bit.rshift(e, 16), where)
            assert.equal(t, bit.band(e, 0x7FFF), where)
            ends = ends + bit.band(bit.rshift(e, 15), 1)
          end
          assert.equal(w, ends, ("groups %d stage %d tile %d: a start and an end from each warp"):format(groups, d, t))
        end
      end
      local sums = o.sums:download("uint32_t", tiles)
      for t = 0, tiles - 1 do
        local want = 0ULL
        for i = t * k_tiles * o.chunk, (t + 1) * k_tiles * o.chunk - 1 do want = want + o.host[i] end
        assert.equal(tonumber(want % 2 ^ 32), tonumber(sums[t]), ("groups %d tile %d"):format(groups, t))
      end
    end
  end)

  gpu_it("a group that skips its pass is a hang naming the ordered barrier, the group and the round", function()
    -- tiles = 2, k_tiles = 1: group 1's wait is the only one (the producer's two stages are
    -- fresh, group 0 has no second tile), so the post-mortem's earliest wait is certainly it
    local _, _ = run(2, 2, 1, { ORDER_SKIP_PASS = 0 }, { timeout_ms = 300 })
    local ok, err = pcall(cuasync.synchronize)
    assert.is_false(ok)
    assert.is_true(cuasync.is_hang(err), tostring(err))
    assert.truthy(tostring(err):find("(consumer group 1) waited", 1, true), tostring(err))
    assert.truthy(tostring(err):find("on math[0][1] of ordered barrier 'math' (stage 0, group 1, round 0, phase 0, parity 0); math[0][1] has received 0 of the 4 arrivals of phase 0", 1, true), tostring(err))
    assert.truthy(err:explain():find("a pass missing: group 0's round 0 turn at stage 0", 1, true), err:explain())
    assert.is_true(err.context_ok)
    -- the same simulated: the model names the same barrier, group and round
    local r = plan():mutate{ skip_pass = 0 }:simulate{ iterations = 12, runs = 20 }
    assert.same({ "math[0][1]", 1, 0 }, { r.barrier_name, r.group, r.round })
    local P, o = run(2, 4, 2)   -- the next kernel in the process runs
    cuasync.synchronize()
    assert.equal(4 * 2 * 4, o.logs:download("uint32_t", 1)[0])
    assert.truthy(P)
  end)

  gpu_it("traced, a group killed in wait_turn keeps its last release in the post-mortem (wait_turn stores the pipeline's held records)", function()
    -- group 0 skips its epilogue pass: group 1 consumed tile 1 (iteration 1, stage 1), released
    -- it (a record the pipeline holds), passed its mainloop turn, and waits for the epilogue's
    local P = plan()
    local k = P:program{ file = "order_log.cu", defines = { ORDER_SKIP_PASS = 0, ORDER_SKIP_TURN = 1 },
                         watchdog = { timeout_ms = 300 }, trace = { blocks = "all" } }:compile()
      :kernel("order_log", "ptr, ptr, ptr, u32, u32")
    local src = H.random_words(2 * P.tx_bytes / 4)
    local sums, logs = cuasync.alloc(4 * 2), cuasync.alloc(P.scratch_bytes)
    k:launch(P:launch_config{ grid = 1 }, src, sums, logs, 2, 1)
    local ok, err = pcall(cuasync.synchronize)
    assert.is_false(ok)
    assert.is_true(cuasync.is_hang(err), tostring(err))
    assert.truthy(tostring(err):find("(consumer group 1) waited", 1, true), tostring(err))
    assert.truthy(tostring(err):find("on math[1][1] of ordered barrier 'math' (stage 1, group 1, round 0, phase 0, parity 0)", 1, true), tostring(err))
    assert.truthy(err.last_events, "no last events in a traced kernel's post-mortem")
    for w = 8, 11 do   -- group 1's warps (4 producer warps, then group 0's 4)
      local line
      for _, l in ipairs(err.last_events) do
        if l:find("^warp " .. w .. "[ :]") then line = l end
      end
      assert.truthy(line, ("warp %d has no line in the post-mortem:\n%s"):format(w, err:explain()))
      assert.truthy(line:find("release empty[1] · it 1", 1, true), line)
    end
  end)
end)
