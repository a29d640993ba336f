-- The GEMM's ping-pong schedule (kernels-src/gemm_pingpong.cu, kernels/gemm_pingpong.lua). CPU: the
-- plan's derivations (roles, the ordered barrier, one group's releases on empty, the epilogue's two
-- chunk buffers, the registers setmaxnreg gives), its refusals by rule before any compile, its
-- protocol through the checker (P:simulate) for even, odd and single tile counts with planted
-- faults found, and every tile that fits compiled for sm_90a with the instructions that tell it
-- apart and no spills. GPU: the kernel matches the reference GEMM on edge shapes (M, N, K not
-- multiples of the tile), one tile, and grids that give a block an odd count of tiles (one group
-- takes one more), on fresh random data into poisoned output; gemm.build's verify with the schedule.
local cuasync = require("cuasync")
local H = require("helper")
local gemm = require("cuasync.kernels.gemm")
local pingpong = require("cuasync.kernels.gemm_pingpong")

local function plan(o)
  local q = { schedule = "pingpong", stages = 4, tile = "128x128", m = 1000, n = 1000, k = 1000 }
  for k, v in pairs(o or {}) do q[k] = v end
  return gemm.plan(q)
end

describe("gemm ping-pong", function()
  local gpu_it = H.gpu_it(it, pending)

  describe("plan", function()
    it("derives a producer warpgroup, two consumer warpgroups in turn, one group's releases, two chunk buffers", function()
      local P = plan()
      assert.equal("pingpong", P.schedule)
      assert.equal(384, P.block)
      assert.equal(2, P.order.groups)
      assert.equal(2, P.order.depth)
      assert.equal("alternate", P.order.consume)
      assert.equal(4, P.order.count)         -- one lane of each warp of a group passes a turn
      assert.equal(1, P.empty_count)         -- release = "warpgroup", one group reads a stage
      assert.equal(2 * 64 * gemm.CHUNK_COLS * 4, P.scratch_bytes)
      assert.equal(32768, P.tx_bytes)        -- a 128 x 64 A tile and a 128 x 64 B tile, bf16
      assert.equal("gemm_pingpong.cu", P.kernel_file)
      assert.equal(4, plan{ release = "warp" }.empty_count)   -- one group's four warps
      assert.equal(0, plan{ epilogue = "direct" }.scratch_bytes or 0)
      assert.equal(64 * 64 * 2 + 256 * 64 * 2, plan{ tile = "64x256" }.tx_bytes)
      assert.equal("cooperative", gemm.plan{ stages = 4, tile = "128x128", m = 64, n = 64, k = 64 }.schedule)
      local r = pingpong.registers(384, 2)
      assert.same({ base = 168, producer = 40, consumer = 232 }, r)
      assert.truthy(P:explain():find("order 'math': 2 groups of 4 consumer warps", 1, true))
    end)

    it("refuses by rule, before any compile", function()
      local function refused(o, msg) assert.error_matches(function() plan(o) end, msg, nil, true) end
      refused({ consumers = 1 }, 'schedule "pingpong" needs 2 consumer warpgroups taking turns (consumers = 1 leaves no warpgroup')
      refused({ consumers = 3 }, 'schedule "pingpong" takes consumers = 2')
      refused({ tile = "128x256" }, 'schedule "pingpong" with tile 128x256: a consumer warpgroup holds the whole tile, 256 accumulator registers a thread')
      refused({ tile = "256x128" }, 'schedule "pingpong" needs BM 64 or 128')
      refused({ cluster = 2 }, 'schedule "pingpong" runs without clusters')
      refused({ ablate = { a_leader = true } }, 'ablate is for schedule = "cooperative"')
      refused({ schedule = "zigzag" }, 'schedule must be "cooperative" or "pingpong" (got "zigzag")')
      refused({ n = 1002 }, 'epilogue "tma" needs n a multiple of 4')
      -- shared memory: the plan's own check (6 stages of 32 KiB and two 8 KiB buffers do not fit)
      local ok, err = pcall(function() plan{ stages = 7 }:check(gemm.limits()) end)
      assert.is_false(ok)
      -- the limit is named by the device where there is one, else by its arch (sm_90 (H100/H200))
      local msg = cuasync.errors.message(err):gsub(" but .- allows 232448 per block", " but LIMIT allows 232448 per block")
      assert.equal("cuasync.pipeline: pipeline 'gemm_pingpong' needs 247792 bytes of dynamic shared memory (7 stages x 32768 + barriers + 16384 B scratch and slack) but LIMIT allows 232448 per block (smem_optin; the system reserves 1024 more per block): 15344 bytes over; each stage takes 32784, so at most 6 stages fit", msg)
      assert.has_no_error(function() plan{ stages = 6 }:check(gemm.limits()) end)
    end)

    it("runs its protocol through the checker: even, odd and single tile counts; planted faults are found", function()
      local P = plan{ stages = 3 }
      for _, c in ipairs({ { 12, 3 }, { 9, 3 }, { 3, 3 }, { 10, 2 }, { 5, 1 }, { 7, 7 } }) do
        local r = P:simulate{ iterations = c[1], tile_iterations = c[2], runs = 20 }
        assert.is_true(r.ok, ("%d iterations, %d a tile: %s"):format(c[1], c[2], r.ok or r:report()))
      end
      local lost = P:mutate{ no_skip = 1 }:simulate{ iterations = 12, tile_iterations = 3 }
      assert.is_false(lost.ok)
      local hang = P:mutate{ skip_pass = 0 }:simulate{ iterations = 12, tile_iterations = 3 }
      assert.equal("deadlock", hang.kind)
      assert.truthy(tostring(hang.at):find("math[0][1] of ordered barrier 'math'", 1, true), tostring(hang.at))
      -- a barrier that counts 3 of a group's 4 passing warps: the fourth over-arrives, or groups overlap
      local short = P:mutate{ order_count = 3 }:simulate{ iterations = 12, tile_iterations = 3 }
      assert.is_false(short.ok)
      assert.truthy(short.kind == "order" or short.kind == "over_arrival", short.kind)
    end)
  end)

  it("compiles every tile that fits for sm_90a, BM / 64 wgmmas a k-step, no spills", function()
    local n = 0
    for _, t in ipairs(pingpong.TILES) do
      local bm, bn = gemm.tile(t)
      for _, ep in ipairs({ "tma", "direct" }) do
        local P = plan{ tile = t, epilogue = ep, stages = 3 }
        local prog = gemm.program(P, { arch = "sm_90a" })
        local ptx = prog:ptx()
        local _, mmas = ptx:gsub(H.literal(("wgmma.mma_async.sync.aligned.m64n%dk16.f32.bf16.bf16"):format(bn)), "")
        assert.equal(4 * bm / 64, mmas, t .. " " .. ep)   -- BK / 16 k-blocks x BM / 64 halves, unrolled
        local _, stores = ptx:gsub(H.literal("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group"), "")
        assert.equal(ep == "tma" and (bm / 64) * (bn / gemm.CHUNK_COLS) or 0, stores, t .. " " .. ep)
        assert.truthy(ptx:find("setmaxnreg.inc.sync.aligned.u32 232", 1, true))
        local r = prog:resources().gemm_pingpong
        assert.equal(168, r.registers, t)   -- the launch bound's cap; the consumers raise theirs to 232
        assert.equal(0, r.spill_stores, t .. " " .. ep)
        assert.equal(0, r.spill_loads, t .. " " .. ep)
        n = n + 1
      end
    end
    assert.equal(8, n)
  end)

  -- Launch P on C (poisoned first) with a grid of `grid` blocks (nil: the persistent grid) and
  -- count the elements off the reference R.
  local function launch(P, dev, C, R, m, n, k, grid)
    C:fill(0xFF)   -- NaN: an element the kernel misses cannot pass
    local kern = gemm.kernel(P)
    local cfg = gemm.launch_config(P, dev, m, n, kern)
    if grid then cfg.grid = grid end
    kern:launch(cfg, gemm.args(P, C, gemm.workspace(P)))   -- the schedulers' arguments too (ping-pong leaves them unread)
    cuasync.synchronize()
    return gemm.compare(C, R, m * n, 1e-3, 1e-4)
  end

  gpu_it("matches the reference on edge shapes, every tile, both epilogues; one tile; odd tile counts a block", function()
    local dev = cuasync.device(0)
    local lines = {}
    -- 128x128 tiles: 6, 9, 1, 10, 48 of them; with grids of 1, 2 and 3 blocks a block takes an odd
    -- count of tiles (group 0 one more than group 1) or a single one (group 1 none)
    for _, shape in ipairs({ { 300, 200, 136 }, { 130, 257, 72 }, { 64, 64, 8 }, { 513, 129, 1000 }, { 700, 1000, 264 } }) do
      local m, n, k = shape[1], shape[2], shape[3]
      local A, B, C, R = cuasync.alloc(m * k * 2), cuasync.alloc(n * k * 2), cuasync.alloc(m * n * 4), cuasync.alloc(m * n * 4)
      gemm.random(A, m * k, H.random_u32())
      gemm.random(B, n * k, H.random_u32())
      gemm.reference(A, B, R, m, n, k)
      for _, t in ipairs(pingpong.TILES) do
        for _, ep in ipairs(n % 4 == 0 and { "tma", "direct" } or { "direct" }) do
          for _, grid in ipairs({ false, 1, 2, 3 }) do
            local raster, release = 1 + #lines % 3, (#lines % 2 == 0) and "warp" or "warpgroup"
            local P = plan{ tile = t, stages = 3, m = m, n = n, k = k, a = A, b = B, epilogue = ep, raster = raster, release = release }
            local bad, worst = launch(P, dev, C, R, m, n, k, grid or nil)
            lines[#lines + 1] = ("%dx%dx%d %s epilogue %s grid %s raster %d release %s: %d bad, largest difference %g"):format(
              m, n, k, t, ep, grid or "persistent", raster, release, bad, worst)
            assert.equal(0, bad, lines[#lines])
          end
        end
      end
      A:close(); B:close(); C:close(); R:close()
    end
    print("\n" .. table.concat(lines, "\n"))
  end)

  gpu_it("gemm.build verifies with schedule = pingpong (the sweep's path), on fresh data each run", function()
    local m, n, k = 1000, 1032, 520
    local A, B, C = cuasync.alloc(m * k * 2), cuasync.alloc(n * k * 2), cuasync.alloc(m * n * 4)
    for _, sched in ipairs({ "cooperative", "pingpong" }) do
      gemm.random(A, m * k, H.random_u32())
      gemm.random(B, n * k, H.random_u32())
      local d = gemm.build({ schedule = sched, stages = 4, tile = "128x128", m = m, n = n, k = k }, { a = A, b = B, c = C })
      d.poison()
      d.run()
      cuasync.synchronize()
      local ok, why = d.verify()
      assert.is_true(ok, sched .. ": " .. tostring(why))
      assert.equal(sched, d.plan.schedule)
    end
    A:close(); B:close(); C:close()
  end)
end)
