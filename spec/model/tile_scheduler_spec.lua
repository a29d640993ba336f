-- The tile scheduler's arithmetic (model/tile_scheduler.lua) and its handshakes
-- (model/tile_scheduler_protocol.lua): the persistent walk is gemm_tma.cu's tiling; on random
-- shapes of every kind each (tile, k-iteration) is done once, a tile's k-ranges meet in k order
-- with no cycle of waits, and the load balance is what the kind promises; every refusal's rule; the
-- turnstile and the cluster reduction never deadlock and always add in order over random
-- schedules, and each planted fault is found and named.
local T = require("cuasync.model.tile_scheduler")
local P = require("cuasync.model.tile_scheduler_protocol")

local function derive(o)
  local d = { m = 100, n = 70, k = 300, bm = 16, bn = 16, bk = 8, raster = 1, sms = 11 }
  for key, v in pairs(o) do d[key] = v end
  return T.derive(d)
end

-- Park-Miller: the random shapes are the same on every run (a failure replays)
local function rng(seed)
  local x = seed
  return function(lo, hi) x = x * 16807 % 2147483647 return lo + x % (hi - lo + 1) end
end

describe("model.tile_scheduler", function()
  it("numbers tiles in raster bands as gemm_tma.cu's tiling does", function()
    local s = derive{ kind = "persistent", m = 5 * 16, n = 3 * 16, raster = 2 }
    local got = {}
    for t = 0, s.tiles - 1 do local r, c = T.tile_at(s, t) got[#got + 1] = r .. "," .. c end
    -- bands of 2 rows, down each column of a band; the last band has one row
    assert.same({ "0,0", "1,0", "0,1", "1,1", "0,2", "1,2", "2,0", "3,0", "2,1", "3,1", "2,2", "3,2", "4,0", "4,1", "4,2" }, got)
    -- the tiling of gemm_tma.cu, written out in Lua, on other shapes
    for _, g in ipairs({ 1, 3, 4, 7 }) do
      local q = derive{ kind = "persistent", m = 7 * 16, n = 9 * 16, raster = g }
      for t = 0, q.tiles - 1 do
        local first = math.floor(t / (g * q.tiles_n)) * g
        local rows = math.min(g, q.tiles_m - first)
        local w = t - first * q.tiles_n
        local r, c = T.tile_at(q, t)
        assert.same({ first + w % rows, math.floor(w / rows) }, { r, c })
      end
    end
  end)

  it("persistent: CTA c takes tiles c, c + G, ... whole", function()
    local s = derive{ kind = "persistent", sms = 8 }
    assert.same({ 35, 38, 8 }, { s.tiles, s.k_tiles, s.ctas })
    local u = T.units(s, 3)
    assert.same({ 3, 11, 19, 27 }, { u[1].tile, u[2].tile, u[3].tile, u[4].tile })
    assert.same({ 0, 38, false, false, true }, { u[1].k_begin, u[1].k_end, u[1].wait, u[1].publish, u[1].epilogue })
    assert.same({}, T.violations(s))
    local b = T.balance(s)
    assert.same({ 5 * 38, 4 * 38, 0, 0 }, { b.max, b.min, b.waits, b.publishes })
  end)

  it("stream-K: the partial wave and one full wave cut into even k-ranges, walked backwards", function()
    local s = derive{ kind = "stream_k", sms = 11 }   -- 35 tiles = 3 waves of 11 + 2
    assert.same({ 13, 22, 13 * 38, 11 }, { s.sk_tiles, s.dp_tiles, s.sk_iters, s.ctas })
    local b = T.balance(s)
    assert.same({ 121, 120 }, { b.max, b.min })        -- 35 * 38 = 1330 = 11 * 120 + 10
    local u = T.units(s, 1)
    assert.same({ 1, 12 }, { u[1].tile, u[2].tile })    -- whole tiles first
    -- then its range 45..90 of the stream-K iterations, backwards: tile 22 + 2 from k 7, tile 23 k 0..7 ...
    local sk = {}
    for i = 3, #u do sk[#sk + 1] = ("%d:%d-%d"):format(u[i].tile, u[i].k_begin, u[i].k_end) end
    assert.same({ "24:0-14", "23:7-38" }, sk)
    assert.is_true(u[3].publish and not u[3].wait)      -- it publishes first what CTA 2 waits for
    assert.is_true(u[4].wait and u[4].epilogue)          -- and waits last for what CTA 0 published
    assert.same({}, T.violations(s))
  end)

  it("split-K: n even k-ranges a tile, side by side on neighbouring CTAs", function()
    local s = derive{ kind = "split_k", splits = 3, mode = "serial", sms = 11 }
    assert.same({ 9, 1 }, { s.ctas, s.cluster })          -- the largest multiple of 3 up to 11
    local u = T.units(s, 4)                               -- units 4, 13, ...: tile 1 split 1, tile 4 split 1
    assert.same({ 1, 1, 13, 26, true, true, false }, { u[1].tile, u[1].split, u[1].k_begin, u[1].k_end, u[1].wait, u[1].publish, u[1].epilogue })
    local r = derive{ kind = "split_k", splits = 3, mode = "reduce", sms = 11 }
    assert.equal(3, r.cluster)
    local r0, r1 = T.units(r, 3)[1], T.units(r, 4)[1]
    assert.same({ 1, true, false, true }, { r0.tile, r0.wait, r0.publish, r0.epilogue })   -- rank 0 gathers
    assert.same({ 1, false, true, false }, { r1.tile, r1.wait, r1.publish, r1.epilogue })
    assert.same({}, T.violations(s))
    assert.same({}, T.violations(r))
  end)

  it("holds its invariants on random shapes of every kind", function()
    local rand, checked = rng(20240607), 0
    for _ = 1, 300 do
      local kind = ({ "persistent", "stream_k", "split_k", "split_k" })[rand(1, 4)]
      local bm, bn, bk = ({ 16, 64, 128 })[rand(1, 3)], ({ 16, 64, 128, 256 })[rand(1, 4)], ({ 8, 32, 64 })[rand(1, 3)]
      local o = { kind = kind, m = rand(bm, 40 * bm), n = rand(bn, 40 * bn), k = rand(bk, 90 * bk), bm = bm, bn = bn, bk = bk,
                  sms = rand(1, 140), splits = kind == "split_k" and rand(2, 9) or nil,
                  mode = kind == "split_k" and (rand(0, 1) == 1 and "reduce" or "serial") or nil }
      o.raster = rand(1, math.ceil(o.m / bm))
      local s = T.derive(o)
      if not T.refusal(s) then
        checked = checked + 1
        local bad = T.violations(s)
        assert.same({}, bad, require("cuasync.util").describe(o))
        local b = T.balance(s)
        assert.equal(s.tiles * s.k_tiles, b.total)
        if kind == "stream_k" then assert.is_true(b.max - b.min <= s.k_tiles, "stream-K within one tile's k loop") end
      end
    end
    assert.is_true(checked > 150, tostring(checked))
  end)

  it("finds a broken walk: a k-iteration twice, one missing, a wait with nothing before it, a cycle", function()
    local s = derive{ kind = "split_k", splits = 2, mode = "serial", m = 32, n = 16, sms = 4 }
    local per = T.all(s)
    per[1][1].k_end = per[1][1].k_end + 1
    local bad = T.violations(s, per)
    assert.truthy(bad[1]:find("done by CTA 1 and CTA 2", 1, true) or bad[1]:find("starts where", 1, true), bad[1])
    per = T.all(s)
    per[0][1].wait = true
    assert.truthy(table.concat(T.violations(s, per), "\n"):find("waits with nothing before it", 1, true))
    -- CTA 0 does tile 1's second half before tile 0's first half, CTA 1 the other way round
    local c = derive{ kind = "split_k", splits = 2, mode = "serial", m = 32, n = 16, sms = 2 }
    per = T.all(c)
    per[0][1], per[0][2] = per[0][2], per[0][1]
    per[1][1], per[1][2] = per[1][2], per[1][1]
    per[0][1], per[1][2] = per[1][2], per[0][1]
    assert.truthy(table.concat(T.violations(c, per), "\n"):find("waits, through a chain, on itself", 1, true))
    -- a split tile's slot outside the workspace, or shared with another tile
    local k = derive{ kind = "stream_k", sms = 11 }
    assert.same({ 13, 13 * 16 * 16 * 4 }, { k.slots, k.workspace_bytes })
    per = T.all(k)
    for c = 0, k.ctas - 1 do for _, u in ipairs(per[c]) do if u.tile == 23 then u.slot = 13 end end end
    assert.truthy(table.concat(T.violations(k, per), "\n"):find("has slot 13, outside the workspace's 13 slots", 1, true))
    per = T.all(k)
    for c = 0, k.ctas - 1 do for _, u in ipairs(per[c]) do if u.tile == 24 then u.slot = 1 end end end
    assert.truthy(table.concat(T.violations(k, per), "\n"):find("has slot 1, which tile 23 holds too", 1, true))
  end)

  it("names every refusal's rule", function()
    local function why(o) return T.refusal(derive(o)) end
    assert.equal("raster = 0 must be in 1..7 (the tile rows: m = 100 in tiles of 16)", why{ kind = "persistent", raster = 0 })
    assert.equal("raster = 8 must be in 1..7 (the tile rows: m = 100 in tiles of 16)", why{ kind = "persistent", raster = 8 })
    assert.equal("splits = 39 is more than the 38 k-tiles (k = 300 in steps of bk = 8): a split would get no k-iteration",
                 why{ kind = "split_k", splits = 39, mode = "serial", sms = 100 })
    assert.equal('mode = "reduce" puts the 9 splits of a tile in one cluster; a portable cluster has at most 8 blocks (mode = "serial")',
                 why{ kind = "split_k", splits = 9, mode = "reduce", sms = 100 })
    assert.equal("splits = 12 is more than the 11 SMs: the splits of a tile run side by side", why{ kind = "split_k", splits = 12, mode = "serial" })
    assert.equal('35 tiles fill the 7 SMs evenly (5 waves): stream-K has no partial wave to spread (kind = "persistent")',
                 why{ kind = "stream_k", sms = 7 })
    assert.equal('k = 8 is one k-tile of bk = 8: stream-K cuts the k loop, and there is none to cut (kind = "persistent")',
                 why{ kind = "stream_k", k = 8 })
    assert.equal("tile {128, 16} is larger than the shape 100 x 70: the tile must fit in the output (a smaller tile)",
                 why{ kind = "persistent", bm = 128 })
    assert.equal("bk = 512 is longer than k = 300: a k-tile must fit in the k extent (a smaller bk)", why{ kind = "persistent", bk = 512 })
  end)
end)

describe("model.tile_scheduler_protocol", function()
  local kinds = {
    stream_k = derive{ kind = "stream_k", sms = 11 },
    stream_k_chain = derive{ kind = "stream_k", m = 16, n = 16, k = 64 * 8, sms = 20 },   -- one tile over 20 CTAs
    serial = derive{ kind = "split_k", splits = 4, mode = "serial", sms = 12 },
    reduce = derive{ kind = "split_k", splits = 3, mode = "reduce", sms = 12 },
    persistent = derive{ kind = "persistent", sms = 12 },
  }

  it("never deadlocks and always adds a tile's k-ranges in k order, over random schedules", function()
    for name, s in pairs(kinds) do
      local r = P.run(s, nil, 40, 7)
      assert.is_true(r.ok, name .. ": " .. r:report())
      assert.equal("ok: 40 runs (random, seed 7), no fault", r:report())
    end
  end)

  it("finds a CTA that skips its signal, and names the tile, the count and who never published", function()
    local r = P.run(kinds.serial, { skip_signal = 1 }, 20, 1)
    assert.same({ false, "deadlock", 2, 0 }, { r.ok, r.kind, r.cta, r.tile })
    assert.truthy(r.message:find("CTA 2 waits for tile 0's flag to read 20 (k-range 20-29); it reads 10, and the k-range that ends at 20 (CTA 1's) never published it", 1, true), r.message)
    local q = P.run(kinds.reduce, { skip_signal = 4 }, 20, 1)
    assert.same({ "deadlock" }, { q.kind })
    assert.truthy(q.message:find("which has 2 of its 3 arrivals (CTA 4 never arrived)", 1, true), q.message)
  end)

  it("finds a fix-up that reads before the partial is published", function()
    for _, name in ipairs({ "stream_k", "serial" }) do
      local s = kinds[name]
      local reader
      for c = 0, s.ctas - 1 do for _, u in ipairs(T.units(s, c)) do if u.wait and not reader then reader = c end end end
      local r = P.run(s, { early_read = reader }, 50, 1)
      assert.same({ false, "stale", reader }, { r.ok, r.kind, r.cta }, name)
      assert.truthy(r.message:find("it read before its turnstile wait", 1, true), r.message)
    end
    local r = P.run(kinds.reduce, { early_read = 0 }, 50, 1)
    assert.same({ "stale", 0 }, { r.kind, r.cta })
    assert.truthy(r.message:find("it read before the cluster sync", 1, true), r.message)
  end)

  it("finds a flag stored without release: its partial not yet landed", function()
    local r = P.run(kinds.serial, { relaxed = true }, 50, 1)
    assert.same({ false, "stale" }, { r.ok, r.kind })
    assert.truthy(r.message:find("a flag stored before its data landed", 1, true), r.message)
  end)

  it("finds a wrong wait count, too high (deadlock) and too low (the flag passes it)", function()
    local hi = P.run(kinds.serial, { wait_delta = 1 }, 20, 1)
    assert.same({ "deadlock" }, { hi.kind })
    assert.truthy(hi.message:find("no k-range of tile 0 ends at 11: the wait counts wrong", 1, true), hi.message)
    local lo = P.run(kinds.stream_k, { wait_delta = -1 }, 20, 1)
    assert.truthy(lo.kind == "flag_passed" or lo.kind == "stale", lo:report())
  end)

  it("finds a rank that rewrites its partial before rank 0 read it (reduce without the second sync)", function()
    local r = P.run(kinds.reduce, { skip_second_sync = true }, 50, 1)
    assert.same({ false, "race" }, { r.ok, r.kind })
    assert.truthy(r.message:find("the peer wrote over it before rank 0 read it", 1, true), r.message)
  end)

  it("replays a seed: the same run, the same fault", function()
    local a = P.run(kinds.serial, { relaxed = true }, 50, 3)
    local b = P.run(kinds.serial, { relaxed = true }, 50, 3)
    assert.same({ a.run, a.message }, { b.run, b.message })
  end)
end)
