-- The GEMM's scheduler axis, output type and PDL (kernels/gemm.lua, gemm_sched.lua, gemm_tma.cu).
-- CPU: the plan's scheduler (defaults, the pair tile of a cluster, shapes shorter than a tile); the
-- persistent walk is the order gemm_tma.cu took before it had a scheduler (its `tiling`, written
-- out here), cluster 1 and 2; every refusal names its rule before any compile (the scheduler's own
-- surfaced through gemm); the launch config's grid; every variant compiles for sm_90a with the
-- instructions that tell it apart (the turnstile's acquire, release fence and named barrier; PDL's
-- griddepcontrol; bf16 conversions). GPU (#gpu): each scheduler on edge shapes (m, n, k not
-- multiples of the tile, tiny k, a few SMs so that stream-K and split-K cut tiles), f32 and bf16,
-- both epilogues, on fresh random data into poisoned output, against the reference; launches in a
-- row take a new epoch and leave every flag at 0; PDL launches back to back; cuBLAS with bf16 out.
local cuasync = require("cuasync")
local errors = require("cuasync.errors")
local H = require("helper")
local gemm = require("cuasync.kernels.gemm")
local GC = require("support.gemm_check")

local function plan(o)
  local q = { stages = 3, tile = "128x128", m = 1000, n = 1000, k = 1000, sms = 132 }
  for key, v in pairs(o or {}) do q[key] = v end
  return gemm.plan(q)
end

-- The error text of gemm.plan(o) (it must raise a plan error: a sweep prunes it).
local function refusal(o)
  local ok, err = pcall(plan, o)
  assert.is_false(ok, "not refused")
  assert.equal("plan", errors.kind(err), tostring(err))
  return errors.message(err)
end

describe("gemm scheduler axis", function()
  local gpu_it = H.gpu_it(it, pending)

  it("plans a persistent scheduler by default, a pair tile with cluster = 2, and any shape a tile covers", function()
    local P = plan()
    assert.equal("persistent", P.sched.kind)
    assert.same({ 128, 128, 64 }, { P.sched.bm, P.sched.bn, P.sched.bk })
    assert.equal(64, P.sched.tiles)
    assert.equal("f32", P.out)
    assert.is_false(P.pdl)
    local C2 = plan{ cluster = 2, tile = "128x256" }
    assert.same({ 128, 512 }, { C2.sched.bm, C2.sched.bn })     -- the cluster's pair of tiles along N
    assert.equal(66, C2.sched.sms)                              -- 132 SMs, pairs of blocks
    -- shorter than one tile in m, n and k: one tile, one k-tile (the loads zero-fill, the stores clip)
    local tiny = plan{ m = 64, n = 64, k = 8, cluster = 2 }
    assert.same({ 1, 1, 1 }, { tiny.sched.tiles_m, tiny.sched.tiles_n, tiny.sched.k_tiles })
    -- a raster band taller than the tile rows: the same order as one band of all of them
    assert.equal(8, plan{ raster = 16 }.sched.raster)
    local S = plan{ scheduler = "split_k", splits = 3 }.sched
    assert.same({ "split_k", 3, "serial", true }, { S.kind, S.splits, S.mode, S.turnstile })
    assert.equal(64 * 128 * 128 * 4, S.workspace_bytes)
    local K = plan{ scheduler = "stream_k", m = 4096, n = 4096, k = 4096, tile = "128x256" }.sched
    assert.equal(248, K.slots)   -- 512 tiles on 132 SMs: the partial wave and one full one cut
    -- bf16 out: the epilogue's chunks take half the scratch
    assert.equal(plan().scratch_bytes / 2, plan{ out = "bf16" }.scratch_bytes)
  end)

  it("walks the tiles in the order gemm_tma.cu's own tiling took (raster bands; cluster pairs)", function()
    -- gemm_tma.cu's `tiling` before the scheduler: t = first, first + step, ...; rank r of a cluster
    local function old(m, n, bm, bn, cl, raster, slots)
      local tiles_m, tiles_n = math.ceil(m / bm), math.ceil(n / bn)
      local pairs_n = math.ceil(tiles_n / cl)
      local count = tiles_m * pairs_n
      local step = math.min(slots, count)
      local walk = {}
      for first = 0, step - 1 do
        for t = first, count - 1, step do
          local f = math.floor(t / (raster * pairs_n)) * raster
          local rows = math.min(raster, tiles_m - f)
          local w = t - f * pairs_n
          for r = 0, cl - 1 do
            walk[#walk + 1] = ("%d:%d %d,%d"):format(first, r, (f + w % rows) * bm, (math.floor(w / rows) * cl + r) * bn)
          end
        end
      end
      return walk
    end
    for _, c in ipairs({ { 1000, 1000, "128x128", 1, 1 }, { 4096, 4096, "128x256", 1, 16 }, { 4096, 4096, "128x256", 2, 16 },
                         { 300, 700, "256x128", 2, 3 }, { 8192, 8192, "128x256", 2, 16 }, { 513, 136, "128x128", 2, 2 }, { 2000, 3000, "128x256", 2, 5 } }) do
      local m, n, tile, cl, raster = c[1], c[2], c[3], c[4], c[5]
      local bm, bn = gemm.tile(tile)
      local S = plan{ m = m, n = n, tile = tile, cluster = cl, raster = raster }.sched
      local walk = {}
      for cta = 0, S.ctas - 1 do
        for _, u in ipairs(S:units(cta)) do
          for r = 0, cl - 1 do walk[#walk + 1] = ("%d:%d %d,%d"):format(cta, r, u.row * bm, u.col * bn * cl + r * bn) end
        end
      end
      assert.same(old(m, n, bm, bn, cl, raster, math.floor(132 / cl)), walk, table.concat(c, " ", 1, 2))
    end
  end)

  it("refuses what a shape or the kernel cannot serve, naming the rule, before any compile", function()
    assert.equal('cuasync.gemm: scheduler = "split_k": splits = 20 is more than the 16 k-tiles (k = 1000 in steps of bk = 64): a split would get no k-iteration',
      refusal{ scheduler = "split_k", splits = 20 })
    assert.equal('cuasync.gemm: scheduler = "stream_k": 1024 tiles fill the 128 SMs evenly (8 waves): stream-K has no partial wave to spread (scheduler = "persistent")',
      refusal{ scheduler = "stream_k", m = 4096, n = 4096, k = 4096, sms = 128 })
    assert.equal('cuasync.gemm: scheduler = "stream_k": k = 64 is one k-tile of bk = 64: stream-K cuts the k loop, and there is none to cut (scheduler = "persistent")',
      refusal{ scheduler = "stream_k", k = 64 })
    -- k shorter than a k-tile: the caller's k in the rule
    assert.equal('cuasync.gemm: scheduler = "stream_k": k = 8 is one k-tile of bk = 64: stream-K cuts the k loop, and there is none to cut (scheduler = "persistent")',
      refusal{ scheduler = "stream_k", k = 8 })
    assert.equal('cuasync.gemm: scheduler = "split_k": splits = 2 is more than the 1 k-tiles (k = 40 in steps of bk = 64): a split would get no k-iteration',
      refusal{ scheduler = "split_k", splits = 2, k = 40 })
    assert.equal('cuasync.gemm: scheduler = "stream_k" needs cluster = 1 (a cluster of 2 shares the A tile of a pair of whole tiles: the persistent walk only)',
      refusal{ scheduler = "stream_k", cluster = 2 })
    assert.equal('cuasync.gemm: scheduler = "split_k" needs splits = n (the k-ranges of a tile, 2 or more)', refusal{ scheduler = "split_k" })
    assert.equal('cuasync.gemm: splits is for scheduler = "split_k" (scheduler is "persistent")', refusal{ splits = 2 })
    assert.equal('cuasync.gemm: mode must be "serial" (the turnstile; the cluster reduce is not built in gemm_tma.cu) (got "reduce")',
      refusal{ scheduler = "split_k", splits = 2, mode = "reduce" })
    assert.equal('cuasync.gemm: scheduler must be "persistent", "stream_k" or "split_k" (got "ping_pong")', refusal{ scheduler = "ping_pong" })
    assert.equal('cuasync.gemm: out must be "f32" or "bf16" (got "f16")', refusal{ out = "f16" })
    assert.equal('cuasync.gemm: epilogue "tma" needs n a multiple of 8 for out = "bf16" (a TMA store writes whole 16-byte units of a row; n = 1004): use epilogue = "direct"',
      refusal{ out = "bf16", n = 1004 })
    assert.equal("cuasync.gemm: pdl must be true or false (got 1)", refusal{ pdl = 1 })
    assert.truthy(pcall(plan, { out = "bf16", n = 1004, epilogue = "direct" }))
    assert.truthy(pcall(plan, { n = 1004 }))   -- f32: a multiple of 4 is enough
  end)

  it("fills the grid from the scheduler", function()
    local lim = gemm.limits()
    assert.equal(64, gemm.launch_config(plan(), lim).grid)
    assert.equal(2 * 32, gemm.launch_config(plan{ cluster = 2 }, lim).grid)
    assert.same({ 128, 1, 1 }, gemm.launch_config(plan{ scheduler = "split_k", splits = 2, m = 128, n = 8192, k = 8192 }, lim).grid)
    assert.same({ 132, 1, 1 }, gemm.launch_config(plan{ scheduler = "stream_k", m = 128, n = 8192, k = 8192 }, lim).grid)
    assert.error_matches(function() gemm.launch_config(plan(), lim, 999, 1000) end,
      "launch_config's m x n = 999 x 1000 is not the plan's 1000 x 1000", 1, true)
  end)

  it("compiles every scheduler, output type and pdl for sm_90a, each with the instructions that tell it apart", function()
    local TURNSTILE = { "ld.acquire.gpu.global.u32", "fence.acq_rel.gpu", "st.relaxed.gpu.global.u32", "ld.global.cg.v4.f32",
                        "st.global.cg.v4.f32" }
    for _, c in ipairs({
      { scheduler = "persistent", cluster = 2, tile = "128x256" },
      { scheduler = "stream_k", tile = "128x256", pdl = true },
      { scheduler = "stream_k", tile = "256x128", out = "bf16" },
      { scheduler = "split_k", splits = 2, m = 128, n = 8192, k = 8192, epilogue = "direct", out = "bf16" },
      { scheduler = "split_k", splits = 4, m = 256, n = 8192, k = 8192, tile = "64x128" },
      { scheduler = "persistent", pdl = true, out = "bf16", epilogue = "direct" },
    }) do
      local P = plan(c)
      local ptx = gemm.program(P, { arch = "sm_90a" }):ptx()
      local name = ("%s %s out %s pdl %s %s"):format(c.scheduler, c.tile or "128x128", c.out or "f32", tostring(c.pdl), c.epilogue or "tma")
      local function has(ins, yes) assert[yes and "truthy" or "falsy"](ptx:find(ins, 1, true), ("%s: %s %s"):format(name, yes and "lacks" or "has", ins)) end
      for _, ins in ipairs(TURNSTILE) do has(ins, P.sched.turnstile) end
      has("griddepcontrol.wait;", c.pdl == true)
      has("griddepcontrol.launch_dependents;", c.pdl == true)
      has("cvt.rn.bf16", c.out == "bf16")   -- each accumulator rounded to bf16 (pairs: cvt.rn.bf16x2.f32)
      has("cp.async.bulk.tensor.2d.global.shared::cta", c.epilogue ~= "direct")   -- the TMA epilogue's store
      -- the turnstile's group barrier (id and count in registers; the epilogue's warpgroup barriers count 128)
      assert.equal(P.sched.turnstile, ptx:find("bar%.sync %%r%d+, %%r%d+;") ~= nil, name)
    end
  end)

  -- -- GPU ----------------------------------------------------------------------------------------

  -- Plan o on buffers A, B, C of an m x n x k problem; launches once; returns the plan and its check.
  local function run(o, A, B, C, R, m, n, k)
    local q = { stages = 3, m = m, n = n, k = k, a = A, b = B }
    for key, v in pairs(o) do q[key] = v end
    local P = gemm.plan(q)
    return P, GC.launch(P, C, R, m, n)
  end

  gpu_it("matches the reference with every scheduler on edge shapes, f32 and bf16 out, both epilogues in turn #gpu", function()
    local lines = {}
    local COMBOS = { { "f32", "tma" }, { "bf16", "direct" }, { "bf16", "tma" }, { "f32", "direct" } }
    -- sms = 5 or 7: a few SMs, so that these small shapes have partial waves for stream-K to cut
    local SCHEDS = { { scheduler = "persistent", raster = 2 }, { scheduler = "stream_k", sms = 5 }, { scheduler = "stream_k", sms = 7, tile = "128x256" },
                     { scheduler = "split_k", splits = 2, sms = 7 }, { scheduler = "split_k", splits = 3, sms = 6, tile = "256x128" } }
    -- k = 8 and 40: one k-tile (stream-K and split-K refused by rule); 72: two (split-K in 3 refused)
    for _, shape in ipairs({ { 300, 200, 136 }, { 130, 264, 1000 }, { 513, 136, 72 }, { 700, 1000, 264 }, { 257, 384, 4096 },
                             { 64, 64, 8 }, { 200, 136, 40 } }) do
      local m, n, k = shape[1], shape[2], shape[3]
      local A, B, C, R = cuasync.alloc(m * k * 2), cuasync.alloc(n * k * 2), cuasync.alloc(m * n * 4), cuasync.alloc(m * n * 4)
      gemm.random(A, m * k, H.random_u32())
      gemm.random(B, n * k, H.random_u32())
      gemm.reference(A, B, R, m, n, k)
      for si, s in ipairs(SCHEDS) do
        -- each scheduler takes the four (out, epilogue) pairs in turn over the shapes: one compile a
        -- (shape, scheduler), since the walk is compiled for its shape
        local out, ep = COMBOS[(si + #lines) % 4 + 1][1], COMBOS[(si + #lines) % 4 + 1][2]
        local o = { out = out, epilogue = ep, tile = "128x128" }
        for key, v in pairs(s) do o[key] = v end
        local ok, P, bad, worst, left = pcall(run, o, A, B, C, R, m, n, k)
        if not ok then   -- a refusal by rule (k-tiles fewer than splits, no partial wave) is fine; nothing else is
          assert.equal("plan", errors.kind(P), tostring(P))
          lines[#lines + 1] = ("%dx%dx%d %s: refused: %s"):format(m, n, k, o.scheduler, errors.message(P))
        else
          lines[#lines + 1] = ("%dx%dx%d %s %s out %s epilogue %s (%d CTAs): %d bad, largest difference %g, %d flags left"):format(
            m, n, k, o.scheduler, o.tile, out, ep, P.sched.ctas, bad, worst, left)
          assert.equal(0, bad, lines[#lines])
          assert.equal(0, left, lines[#lines])
        end
      end
      A:close(); B:close(); C:close(); R:close()
    end
    print("\n" .. table.concat(lines, "\n"))
    -- the shapes above cut tiles with both turnstile kinds (not every row a refusal)
    local cut = 0
    for _, l in ipairs(lines) do if l:find("_k ") and l:find("0 bad") then cut = cut + 1 end end
    assert.truthy(cut >= 12, tostring(cut))
  end)

  gpu_it("takes a new epoch each launch, verifies each, leaves the flags at 0; PDL back to back; cuBLAS with bf16 out #gpu", function()
    local m, n, k = 128, 2048, 4096
    local A, B, C, R = cuasync.alloc(m * k * 2), cuasync.alloc(n * k * 2), cuasync.alloc(m * n * 4), cuasync.alloc(m * n * 4)
    gemm.random(A, m * k, H.random_u32())
    gemm.random(B, n * k, H.random_u32())
    gemm.reference(A, B, R, m, n, k)
    for _, o in ipairs({ { scheduler = "stream_k" }, { scheduler = "split_k", splits = 4 }, { scheduler = "split_k", splits = 2, pdl = true },
                         { scheduler = "stream_k", pdl = true, out = "bf16" }, { scheduler = "persistent", pdl = true } }) do
      local q = { stages = 4, tile = "128x128", m = m, n = n, k = k }
      for key, v in pairs(o) do q[key] = v end
      local v = gemm.build(q, { a = A, b = B, c = C, ref = R })
      local label = ("%s %s pdl %s"):format(o.scheduler, o.out or "f32", tostring(o.pdl))
      assert.equal(o.pdl == true, v.config.programmatic == true, label)
      for round = 1, 3 do
        v.poison()
        local before = v.plan.sched.epoch
        for _ = 1, 4 do v.run() end   -- back to back: with pdl, each may start while the last one ends
        cuasync.synchronize()
        if v.plan.sched.turnstile then assert.equal(((before or 0) + 4 - 1) % 4095 + 1, v.plan.sched.epoch, label) end
        local ok, why = v.verify()
        assert.is_true(ok, ("%s round %d: %s"):format(label, round, tostring(why)))
      end
      if v.plan.sched.turnstile then
        local f = v.workspace.flags:download("uint32_t", v.plan.sched.slots)
        for i = 0, v.plan.sched.slots - 1 do assert.equal(0, f[i], ("%s: flag %d left at %d"):format(label, i, f[i])) end
      end
    end
    C:poison()
    gemm.cublas(A, B, C, m, n, k, "bf16")
    cuasync.synchronize()
    local t = gemm.TOLERANCE.bf16
    local bad, worst = gemm.compare(C, R, m * n, t.atol, t.rtol, "bf16")
    assert.equal(0, bad, ("cuBLAS bf16 out: %d bad, largest difference %g"):format(bad, worst))
    A:close(); B:close(); C:close(); R:close()
  end)
end)
