-- The attention forward's persistent grid (attention.plan{ persistent = true }, kernels/attention_sched.lua).
-- CPU: the plan (the scheduler's grid and unit order: a head's q tiles in a row, causal each
-- head's longest first, in a snake; every unit once), the refusals by rule, the kernel's protocol over several units a block in the
-- CPU model (odd and even unit counts, every schedule; planted faults found), and every variant's
-- PTX (NVRTC, sm_90a): no spills with the watchdog or without, and traced at d 128 (four). GPU (#gpu): persistent variants
-- against the CPU reference on edge shapes (s = 1, 100, 300; d 64, 128; causal and not), with a
-- unit count smaller than the grid (sms above it) and larger (sms below it: several units a
-- block, odd and even counts), output poisoned first (support/attention_check.lua).
local H = require("helper")
local attention = require("cuasync.kernels.attention")
local AC = require("support.attention_check")

local plan = AC.planner{ b = 2, h = 3, s = 300, d = 128, causal = false, q_tile = 128, kv_tile = 128, stages = 2, persistent = true,
                         sms = 132 }

describe("attention persistent", function()
  local gpu_it = H.gpu_it(it, pending)

  describe("plan", function()
    it("walks (head, q tile) units on min(units, sms) blocks, a head's q tiles in a row; causal: each head's longest first, in a snake", function()
      local P = plan()
      assert.equal(P.q_bytes + 16, P.scratch_bytes)   -- Q, q_full, q_empty
      assert.equal(2 * 3 * 3, P.sched.ctas)          -- 18 units on 132 SMs: one a block
      assert.same({ 18, 1, 1 }, attention.launch_config(P, "sm_90").grid)
      assert.equal(4, plan{ sms = 4 }.sched.ctas)
      assert.equal(4, #attention.plan{ b = 1, h = 1, s = 64, d = 64, q_tile = 64, kv_tile = 64, persistent = true, sms = 4 }.sched:units(0) + 3)
      -- causal, 2 heads x 5 q tiles of 64 on 4 blocks: every unit once, in head order (a head's
      -- q tiles in a row, its longest first), dealt in a snake (round 1 runs the blocks in reverse)
      local C = plan{ b = 1, h = 2, d = 64, q_tile = 64, kv_tile = 64, causal = true, sms = 4 }
      local seen = {}
      for c = 0, 3 do
        for _, u in ipairs(attention.units(C, c)) do
          local key = u.bh .. ":" .. u.q0
          assert.is_nil(seen[key], key)
          seen[key] = true
        end
      end
      local n = 0
      for _ in pairs(seen) do n = n + 1 end
      assert.equal(10, n)
      assert.same({ { bh = 0, q0 = 256, tiles = 5 }, { bh = 1, q0 = 128, tiles = 3 }, { bh = 1, q0 = 64, tiles = 2 } }, attention.units(C, 0))
      assert.same({ { bh = 0, q0 = 64, tiles = 2 }, { bh = 0, q0 = 0, tiles = 1 } }, attention.units(C, 3))
      -- 4 x 16 heads x 32 q tiles of 128, causal, on 132 blocks: the first round holds the q tiles
      -- of 5 heads (head order: the blocks running at once share few heads' K and V); the busiest
      -- block 3.1% over the mean kv tiles (plain round robin in this order: 12.5%)
      local B = attention.plan{ b = 4, h = 16, s = 4096, d = 128, q_tile = 128, kv_tile = 128, causal = true, persistent = true, sms = 132 }
      local most, total, units, heads = 0, 0, 0, {}
      for c = 0, B.sched.ctas - 1 do
        local sum = 0
        for i, u in ipairs(attention.units(B, c)) do
          sum, units = sum + u.tiles, units + 1
          if i == 1 then heads[u.bh] = true end
        end
        most, total = math.max(most, sum), total + sum
      end
      local first_heads = 0
      for _ in pairs(heads) do first_heads = first_heads + 1 end
      assert.equal(5, first_heads)
      assert.equal(2048, units)
      assert.equal(64 * 32 * 33 / 2, total)
      assert.truthy(most <= 1.032 * total / 132, ("the busiest block: %d kv tiles, the mean %.1f"):format(most, total / 132))
      assert.has_error(function() attention.units(B, 132) end, "cuasync.attention.units: c must be an integer in 0..131 (got 132)")
      -- not causal: a head's q tiles one after another (the default grid's order)
      local N = plan{ b = 1, h = 2, d = 64, q_tile = 64, kv_tile = 64, sms = 4 }
      assert.same({ 0, 0, 1 }, { attention.units(N, 0)[1].bh, attention.units(N, 0)[2].bh, attention.units(N, 0)[3].bh })
      assert.same({ 0, 256, 192 }, { attention.units(N, 0)[1].q0, attention.units(N, 0)[2].q0, attention.units(N, 0)[3].q0 })
      -- the default stays one block a q tile: no scheduler, the scratch as before
      local D = attention.plan{ b = 2, h = 3, s = 300, d = 128 }
      assert.is_nil(D.sched)
      assert.equal(D.q_bytes + 8, D.scratch_bytes)
      assert.same({ 3, 6, 1 }, attention.launch_config(D, "sm_90").grid)
      -- more heads than the default grid's y dimension holds: served persistent
      assert.equal(132, plan{ b = 300, h = 300, s = 64, d = 64, q_tile = 64, kv_tile = 64 }.sched.ctas)
    end)

    it("refuses what it cannot serve, by rule, before any compile", function()
      local cases = {
        { { persistent = 1 }, "persistent must be true or false (got 1)" },
        { { persistent = false, sms = 4 }, "sms is for persistent = true" },
        { { sms = 0 }, "sms must be an integer in 1..4096 (got 0)" },
        { { sms = 2.5 }, "sms must be an integer in 1..4096 (got 2.5)" },
        { { b = 65535, h = 65535, s = 64 }, "persistent = true: b x h x q tiles = 65535 x 65535 x 1 = 4294836225 units, more than the device walk counts (2147483646)" },
        { { persistent = false, sms = AC.NONE, b = 300, h = 300 }, "b x h = 90000 heads, but a block takes one head's q tile and the grid's y dimension holds at most 65535 (persistent = true walks any count)" },
      }
      for _, c in ipairs(cases) do
        local ok, err = pcall(plan, c[1])   -- sms = AC.NONE: left out
        assert.is_false(ok, c[2])
        assert.truthy(tostring(err):find("cuasync.attention: " .. c[2], 1, true), tostring(err))
      end
      local D = attention.plan{ b = 1, h = 2, s = 100, d = 64 }
      for _, c in ipairs({
        { function() attention.units(D, 0) end, "cuasync.attention.units: the plan is not persistent" },
        { function() attention.simulate(D, { units = { 2, 1 } }) end, "cuasync.attention.simulate: units is for persistent plans" },
        { function() attention.simulate(D, { mutate = { skip_q_wait = 0 } }) end, "cuasync.attention.simulate: mutate.skip_q_wait is a fault of a persistent plan's Q handover" },
        { function() attention.simulate(plan(), { units = { 2, 0 } }) end, "cuasync.attention.simulate: units[2] must be an integer in 1..64 (got 0)" },
        { function() attention.simulate(plan(), { units = { 2, 1 }, mutate = { skip_q_wait = 2 } }) end, "cuasync.attention.simulate: mutate.skip_q_wait must be an integer in 0..1 (got 2)" },
        { function() attention.simulate(plan(), { mutate = { restart_ring = 1 } }) end, "cuasync.attention.simulate: mutate.restart_ring must be true" },
        { function() attention.simulate(plan(), { mutate = { lag_ring = 1 } }) end, "cuasync.attention.simulate: mutate.lag_ring must be true" },
      }) do
        local ok, err = pcall(c[1])
        assert.is_false(ok, c[2])
        assert.truthy(tostring(err):find(c[2], 1, true), tostring(err))
      end
    end)

    it("walks the kernel's protocol over several units a block in the CPU model; planted faults are found", function()
      for _, v in ipairs({ { 64, "cooperative" }, { 128, "cooperative" }, { 128, "pingpong" } }) do
        for _, overlap in ipairs({ false, true }) do
          for stages = 2, 4 do
            for _, units in ipairs({ { 1 }, { 2, 1 }, { 4, 3, 1 }, { 1, 1, 1, 1 }, { 2, 5, 3 } }) do
              local P = plan{ d = 64, q_tile = v[1], kv_tile = 64, stages = stages, schedule = v[2], overlap = overlap, causal = true }
              local r = attention.simulate(P, { units = units, runs = 20 })
              assert.is_true(r.ok, r.ok or r:report())
            end
          end
        end
      end
      -- the units block 0 of a plan really walks (causal: 5, 3, 2 tiles)
      local C = plan{ b = 1, h = 2, d = 64, q_tile = 64, kv_tile = 64, causal = true, sms = 4, schedule = "cooperative", overlap = true }
      local counts = {}
      for i, u in ipairs(attention.units(C, 0)) do counts[i] = u.tiles end
      assert.same({ 5, 3, 2 }, counts)
      local r = attention.simulate(C, { units = counts, runs = 30 })
      assert.is_true(r.ok, r.ok or r:report())
      for _, v in ipairs({ { 64, "cooperative", false }, { 128, "pingpong", true }, { 128, "cooperative", true } }) do
        local P = plan{ d = 64, q_tile = v[1], kv_tile = 64, schedule = v[2], overlap = v[3] }
        for _, c in ipairs({ { { skip_q_wait = 0 }, "error", "its Q copy has not landed" }, { { skip_q_wait = 1 }, "error", "its Q copy has not landed" },
                             { { skip_q_release = 0 }, "deadlock" }, { { restart_ring = true }, "parity_aliasing" },
                             { { lag_ring = true }, "over_arrival" } }) do
          local f = attention.simulate(P, { units = { 3, 2, 1 }, mutate = c[1] })
          assert.equal(c[2], f.kind, f.ok and "no fault found" or f:report())
          if c[3] then assert.truthy(f.message:find(c[3], 1, true), f.message) end
        end
      end
    end)
  end)

  describe("attention_fwd.cu", function()
    it("compiles every persistent variant for sm_90a with no spills, with the watchdog (and at d 128 without)", function()
      local lines = {}
      for _, d in ipairs({ 64, 128 }) do
        for _, q_tile in ipairs({ 64, 128, 192 }) do
          for _, kv_tile in ipairs({ 64, 128 }) do
            for _, schedule in ipairs(q_tile > 64 and { "cooperative", "pingpong" } or { "cooperative" }) do
              for _, overlap in ipairs({ false, true }) do
                for _, causal in ipairs({ false, true }) do
                  local o = { d = d, q_tile = q_tile, kv_tile = kv_tile, schedule = schedule, overlap = overlap, causal = causal }
                  local ok, P = pcall(plan, o)
                  if ok or q_tile < 192 then
                    assert.truthy(ok, tostring(P))
                    local name = ("d %3d q_tile %3d kv_tile %3d %-11s overlap %-5s causal %-5s"):format(d, q_tile, kv_tile, schedule,
                      tostring(overlap), tostring(causal))
                    local prog = attention.program(P, { arch = "sm_90a" })
                    local ptx = prog:ptx()
                    -- Q on its two barriers: one wait a unit (q_full), the producer's on q_empty
                    local _, waits = ptx:gsub("mbarrier%.try_wait%.parity", "")
                    assert.truthy(waits >= 3, name)
                    assert.truthy(ptx:find("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes", 1, true), name)
                    local r = prog:resources().attention_fwd
                    assert.equal(0, r.spill_stores + r.spill_loads, name .. ": spills with the watchdog")
                    -- without the watchdog at d 128 only, where the registers are tightest (each
                    -- compile is a second or more of the full make test's ten minutes)
                    local bare = d == 128 and attention.program(P, { arch = "sm_90a", watchdog = false }):resources().attention_fwd
                    if bare then assert.equal(0, bare.spill_stores + bare.spill_loads, name .. ": spills without the watchdog") end
                    lines[#lines + 1] = ("%s: %d registers%s"):format(name, r.registers,
                      bare and (" (%d without the watchdog)"):format(bare.registers) or "")
                  end
                end
              end
            end
          end
        end
      end
      print("\n" .. table.concat(lines, "\n"))
    end)

    -- Traced, the producer keeps 32 registers (model.PRODUCER_REGS_TRACED; 24 spilled 20-60 bytes
    -- at d 128, docs/attention.md section 5). Four compiles: the variants that spilled most,
    -- with the watchdog and without, kv 128 and 176.
    it("compiles the traced d 128 variants with no spills (the producer at 32 registers, the consumers at 232)", function()
      for _, v in ipairs({ { 128, "pingpong", true, true }, { 176, "pingpong", true, true },
                           { 128, "cooperative", false, false }, { 176, "cooperative", true, false } }) do
        local P = plan{ s = 4096, b = 4, h = 16, kv_tile = v[1], schedule = v[2], overlap = v[3], causal = true, stages = 4 }
        local prog = attention.program(P, { arch = "sm_90a", trace = true, watchdog = v[4] })
        local name = ("kv_tile %d %s overlap %s watchdog %s"):format(v[1], v[2], tostring(v[3]), tostring(v[4]))
        local r = prog:resources().attention_fwd
        assert.equal(0, r.spill_stores + r.spill_loads, name .. ": spills traced")
        local ptx = prog:ptx()
        assert.truthy(ptx:find("setmaxnreg.dec.sync.aligned.u32 32;", 1, true), name)
        assert.truthy(ptx:find("setmaxnreg.inc.sync.aligned.u32 232;", 1, true), name)
      end
    end)
  end)

  -- The variants on edge shapes; sms 3 (2 heads x 1..5 q tiles: several units a block, odd and
  -- even counts; s = 1: 2 units, fewer than the grid would be) and sms 132 (fewer units than SMs).
  -- Each persistent shape is a compile of its own, so not every product: each of the 12 shapes
  -- takes two of the five variants in turn, on sms 3 but every third on 132, so that every
  -- variant runs on both grids, with several units in a block, both head dims and causal and not
  -- (the product was 120 compiles: minutes of the make test).
  gpu_it("persistent variants match the CPU reference on edge shapes (s = 1, 100, 300; d 64, 128; causal and not; units below and above the grid)", function()
    local V = { { 64, 64, "cooperative", false }, { 64, 64, "cooperative", true }, { 128, 128, "cooperative", true },
                { 128, 64, "pingpong", false }, { 128, 128, "pingpong", true } }
    local lines, k, seen = {}, 0, {}
    for _, s in ipairs({ 1, 100, 300 }) do
      for _, d in ipairs({ 64, 128 }) do
        for _, causal in ipairs({ false, true }) do
          local data = AC.shape_data(1, 2, s, d, causal)
          for j = 0, 1 do
            local vi = (2 * k + j) % #V + 1
            local v, sms = V[vi], (k + j + 1) % 3 == 0 and 132 or 3
            local o = { b = 1, h = 2, s = s, d = d, causal = causal, q_tile = v[1], kv_tile = v[2], schedule = v[3], overlap = v[4],
                        stages = 2 + #lines % 3, out = #lines % 2 == 0 and "bf16" or "f32", persistent = true, sms = sms }
            lines[#lines + 1] = AC.check(o, data)
            for _, key in ipairs({ vi .. ":sms" .. sms, vi .. ":d" .. d, vi .. ":" .. tostring(causal) }) do seen[key] = true end
            local P = attention.plan(o)
            for c = 0, P.sched.ctas - 1 do   -- a block with several units: the ring carried across them
              if #attention.units(P, c) > 1 then seen[vi .. ":several"] = true end
            end
          end
          k = k + 1
          data.q:close(); data.k:close(); data.v:close()
        end
      end
    end
    for vi = 1, #V do
      for _, key in ipairs({ "sms3", "sms132", "d64", "d128", "true", "false", "several" }) do
        assert.truthy(seen[vi .. ":" .. key], ("variant %d never ran with %s"):format(vi, key))
      end
    end
    print("\n" .. table.concat(lines, "\n"))
  end)

  gpu_it("persistent q_tile = 192 (three consumer warpgroups) matches the CPU reference (s = 300, several units a block)", function()
    local lines = {}
    for _, causal in ipairs({ false, true }) do
      local data = AC.shape_data(2, 3, 300, 64, causal)
      for _, v in ipairs({ { "cooperative", false }, { "pingpong", true } }) do
        lines[#lines + 1] = AC.check({ b = 2, h = 3, s = 300, d = 64, causal = causal, q_tile = 192, kv_tile = 64, stages = 3,
                                       schedule = v[1], overlap = v[2], out = "bf16", persistent = true, sms = 5 }, data)
      end
      data.q:close(); data.k:close(); data.v:close()
    end
    print("\n" .. table.concat(lines, "\n"))
  end)

  gpu_it("a large persistent shape matches the f32 reference on the device (build's verify), on the device's SM count", function()
    local cuasync = require("cuasync")
    for _, v in ipairs({ { false, "cooperative", false }, { true, "pingpong", true }, { true, "cooperative", true } }) do
      local causal, schedule, overlap = v[1], v[2], v[3]
      local b, h, s, d = 2, 20, 1000, 128   -- 2 x 20 x 8 = 320 units: two waves and a part on 132 SMs
      local n = b * h * s * d
      local bufs = { q = cuasync.alloc(n * 2), k = cuasync.alloc(n * 2), v = cuasync.alloc(n * 2), o = cuasync.alloc(n * 2),
                     lse = cuasync.alloc(b * h * s * 4) }
      for _, f in ipairs({ "q", "k", "v" }) do attention.random(bufs[f], n, H.random_u32()) end
      local B = attention.build({ b = b, h = h, s = s, d = d, causal = causal, q_tile = 128, kv_tile = 128, stages = 4,
                                  schedule = schedule, overlap = overlap, persistent = true }, bufs)
      assert.equal(math.min(320, cuasync.device(0).sms), B.config.grid[1])
      B.poison()
      B.run()
      cuasync.synchronize()
      local ok, why = B.verify()
      assert.is_true(ok, ("causal %s %s overlap %s: %s"):format(tostring(causal), schedule, tostring(overlap), tostring(why)))
      for _, x in pairs(bufs) do x:close() end
    end
  end)

  -- The traced walk's unit boundary: each consumer warp records Q's wait and the epilogue as
  -- ranges once a unit (kernels/attention.lua's TRACE_NAMES; examples/attention_sweep.lua --timeline).
  gpu_it("a traced persistent kernel records Q's wait and the epilogue once a unit in every consumer warp", function()
    local cuasync = require("cuasync")
    local b, h, s, d = 1, 2, 300, 64   -- 2 heads x 5 q tiles of 64 = 10 units on 3 blocks
    local n = b * h * s * d
    local bufs = { q = cuasync.alloc(n * 2), k = cuasync.alloc(n * 2), v = cuasync.alloc(n * 2), o = cuasync.alloc(n * 2),
                   lse = cuasync.alloc(b * h * s * 4) }
    for _, f in ipairs({ "q", "k", "v" }) do attention.random(bufs[f], n, H.random_u32()) end
    local B = attention.build({ b = b, h = h, s = s, d = d, q_tile = 64, kv_tile = 64, stages = 3, overlap = true, persistent = true,
                                sms = 3, trace = { blocks = "all", names = attention.TRACE_NAMES } }, bufs)
    B.poison()
    B.run()
    cuasync.synchronize()
    local ok, why = B.verify()
    assert.is_true(ok, tostring(why))
    local T = B.kernel:trace()
    assert.equal(0, T.lost)
    local count = {}
    for _, sp in ipairs(T.spans) do
      if sp.kind == "range" then
        assert.equal("consumer", T.tracks[sp.track].role)
        assert.is_true(sp.t1 >= sp.t0 and not sp.open, sp.name)
        count[sp.name] = (count[sp.name] or 0) + 1
      end
    end
    -- 10 units, each on one block's consumer warpgroup: 4 warps, a range of each name a unit
    assert.same({ ["q wait"] = 40, epilogue = 40 }, count)
    for _, x in pairs(bufs) do x:close() end
  end)
end)
