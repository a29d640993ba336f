-- A tile scheduler's arithmetic: which work each CTA of a persistent grid does, in what order,
-- and which k-ranges of a tile meet in a turnstile. Pure Lua; cuasync.scheduler (scheduler.lua)
-- checks the user's fields, model/tile_scheduler_header.lua writes the same walk as C++
-- (kernels-src/cuasync/scheduler.cuh), model/tile_scheduler_protocol.lua runs the handshakes.
--   tiles: the output's tiles_m x tiles_n tiles of bm x bn, numbered in raster bands of `raster`
--     tile rows (down each column of a band before the next column: kernels-src/gemm_tma.cu's
--     `tiling` with CLUSTER = 1); k_tiles = ceil(k / bk) k-iterations per tile.
--   persistent: CTA c takes tiles c, c + G, c + 2G, ... whole (G = min(tiles, sms)).
--   stream_k: the last tiles (sk_tiles: the partial wave, plus one full wave when there is one
--     before it) are cut into their k-iterations and the sk_tiles x k_tiles iterations dealt in
--     contiguous, even ranges to the G = sms CTAs; the other tiles go whole, as persistent, first.
--     A CTA walks its range from its end backwards, so the first k-range it does is the one the
--     next CTA waits for, and the one it waits for itself comes last.
--   split_k: each tile in `splits` even k-ranges; unit u = tile * splits + split goes to CTA
--     u mod G (G = the largest multiple of splits up to sms, at most tiles x splits), so a tile's
--     splits run side by side. mode "serial": a turnstile in global memory; "reduce": the splits
--     of a tile are the CTAs of one cluster, rank 0 adds its peers' partials through DSMEM.
-- A unit: { tile, row, col, k_begin, k_end, split, wait, publish, epilogue } with k in k-tiles.
-- The turnstile (serial split-K and stream-K): a flag per tile counts the k-tiles accumulated into
-- the tile's partial. A unit with k_begin > 0 waits until flag == k_begin (acquire), adds the
-- partial to its own; one with k_end < k_tiles then writes the partial and sets flag = k_end
-- (release); the one with k_end == k_tiles writes the output and resets the flag to 0.
local M = {}

M.KINDS = { persistent = "whole tiles, dealt round-robin to a persistent grid",
            stream_k = "the last waves' tiles cut into k-iterations dealt evenly to every SM",
            split_k = "each tile cut into n k-ranges" }
M.MODES = { serial = "a turnstile in global memory: split i adds its partial after split i - 1",
            reduce = "the splits of a tile form a cluster; rank 0 adds its peers' partials through DSMEM" }
M.MAX_CLUSTER = 8          -- portable cluster: the reduce mode's splits
M.MAX_UNITS = 2 ^ 31       -- tiles x k-tiles, counted in 32-bit on the device

local floor, min, max = math.floor, math.min, math.max
local function cdiv(a, b) return floor((a + b - 1) / b) end

-- Tile t's (row, col) in tiles: raster bands of g tile rows, column by column inside a band.
function M.tile_at(s, t)
  local g = s.raster
  local first = floor(t / (g * s.tiles_n)) * g
  local rows = min(g, s.tiles_m - first)
  local w = t - first * s.tiles_n
  return first + w % rows, floor(w / rows)
end

-- The i-th of n even parts of 0..total (the first total % n parts one longer): begin, end.
local function part(total, n, i)
  local base, extra = floor(total / n), total % n
  local b = i * base + min(i, extra)
  return b, b + base + (i < extra and 1 or 0)
end
M.part = part

-- The derived numbers (no checks: scheduler.lua refuses first; M.refusal says what is wrong).
-- o = { kind, m, n, k, bm, bn, bk, raster, splits, mode, sms }
function M.derive(o)
  local s = { kind = o.kind, m = o.m, n = o.n, k = o.k, bm = o.bm, bn = o.bn, bk = o.bk, raster = o.raster or 1,
              mode = o.mode, sms = o.sms, splits = o.splits or 1 }
  s.tiles_m, s.tiles_n, s.k_tiles = cdiv(o.m, o.bm), cdiv(o.n, o.bn), cdiv(o.k, o.bk)
  s.tiles = s.tiles_m * s.tiles_n
  s.cluster = 1
  s.sk_tiles, s.sk_iters = 0, 0
  if s.kind == "persistent" then
    s.ctas = min(s.tiles, s.sms)
  elseif s.kind == "stream_k" then
    local waves = floor(s.tiles / s.sms)
    -- the partial wave, and one full wave before it when there is one (so each CTA's stream-K
    -- range is at least one tile's k loop: fewer fix-ups than spreading the partial wave alone)
    s.sk_tiles = s.tiles % s.sms + (waves >= 1 and s.sms or 0)
    s.sk_iters = s.sk_tiles * s.k_tiles
    s.ctas = min(s.sms, s.sk_iters)
  else
    s.ctas = min(s.tiles * s.splits, floor(s.sms / s.splits) * s.splits)
    if s.mode == "reduce" then s.cluster = s.splits end
  end
  s.dp_tiles = s.tiles - s.sk_tiles
  return s
end

-- The refusal of a derived scheduler, or nil: the rule broken, in words (scheduler.lua adds the call).
function M.refusal(s)
  if s.raster < 1 or s.raster > s.tiles_m then
    return ("raster = %d must be in 1..%d (the tile rows: m = %d in tiles of %d)"):format(s.raster, s.tiles_m, s.m, s.bm)
  end
  if s.bm > s.m or s.bn > s.n then
    return ("tile {%d, %d} is larger than the shape %d x %d: the tile must fit in the output (a smaller tile)"):format(
      s.bm, s.bn, s.m, s.n)
  end
  if s.bk > s.k then
    return ("bk = %d is longer than k = %d: a k-tile must fit in the k extent (a smaller bk)"):format(s.bk, s.k)
  end
  if s.tiles * s.k_tiles >= M.MAX_UNITS then
    return ("%d tiles x %d k-tiles is more work than the device iterator counts (2^31 - 1)"):format(s.tiles, s.k_tiles)
  end
  if s.kind == "split_k" then
    if s.splits > s.k_tiles then
      return ("splits = %d is more than the %d k-tiles (k = %d in steps of bk = %d): a split would get no k-iteration"):format(
        s.splits, s.k_tiles, s.k, s.bk)
    end
    if s.splits > s.sms then
      return ("splits = %d is more than the %d SMs: the splits of a tile run side by side"):format(s.splits, s.sms)
    end
    if s.mode == "reduce" and s.splits > M.MAX_CLUSTER then
      return ('mode = "reduce" puts the %d splits of a tile in one cluster; a portable cluster has at most %d blocks (mode = "serial")'):format(
        s.splits, M.MAX_CLUSTER)
    end
  elseif s.kind == "stream_k" then
    if s.tiles % s.sms == 0 then
      return ("%d tiles fill the %d SMs evenly (%d wave%s): stream-K has no partial wave to spread (kind = \"persistent\")"):format(
        s.tiles, s.sms, s.tiles / s.sms, s.tiles == s.sms and "" or "s")
    end
    if s.k_tiles < 2 then
      return ("k = %d is one k-tile of bk = %d: stream-K cuts the k loop, and there is none to cut (kind = \"persistent\")"):format(s.k, s.bk)
    end
  end
end

local function unit(s, t, kb, ke, split)
  local r, c = M.tile_at(s, t)
  return { tile = t, row = r, col = c, k_begin = kb, k_end = ke, split = split,
           wait = kb > 0, publish = ke < s.k_tiles, epilogue = ke == s.k_tiles }
end

-- CTA c's units in the order it does them.
function M.units(s, c)
  local out = {}
  if s.kind == "persistent" then
    for t = c, s.tiles - 1, s.ctas do out[#out + 1] = unit(s, t, 0, s.k_tiles, 0) end
  elseif s.kind == "stream_k" then
    for t = c, s.dp_tiles - 1, s.ctas do out[#out + 1] = unit(s, t, 0, s.k_tiles, 0) end
    local a, b = part(s.sk_iters, s.ctas, c)
    local hi = b
    while hi > a do   -- backwards: the range's last tile first
      local t = floor((hi - 1) / s.k_tiles)
      local lo = max(a, t * s.k_tiles)
      out[#out + 1] = unit(s, s.dp_tiles + t, lo - t * s.k_tiles, hi - t * s.k_tiles, 0)
      hi = lo
    end
  else
    for u = c, s.tiles * s.splits - 1, s.ctas do
      local t, sp = floor(u / s.splits), u % s.splits
      local kb, ke = part(s.k_tiles, s.splits, sp)
      local w = unit(s, t, kb, ke, sp)
      if s.mode == "reduce" then   -- rank 0 gathers its peers' partials; the others hand theirs over
        w.wait, w.publish, w.epilogue = sp == 0, sp ~= 0, sp == 0
      end
      out[#out + 1] = w
    end
  end
  return out
end

-- Every unit of every CTA (the stream-K tiles are the last in tile order, and a CTA does its
-- whole tiles first: the partial wave comes last, as in a persistent walk).
function M.all(s)
  local per = {}
  for c = 0, s.ctas - 1 do per[c] = M.units(s, c) end
  return per
end

-- The wait-for graph: unit (c, i) waits for (c, i - 1) (program order) and for the unit its
-- turnstile waits on (the tile's k-range before it; reduce: every peer of its cluster, and each
-- peer's unit before). A cycle is a deadlock even with every CTA resident. Returns a cycle's
-- description, or nil.
local function cycle(s, per, before)
  local id, nodes = {}, {}
  for c = 0, s.ctas - 1 do
    for i, u in ipairs(per[c]) do
      local n = { c = c, i = i, u = u, deps = {} }
      nodes[#nodes + 1] = n
      id[u] = n
      if i > 1 then n.deps[#n.deps + 1] = id[per[c][i - 1]] end
    end
  end
  for _, n in ipairs(nodes) do
    for _, d in ipairs(before(n)) do n.deps[#n.deps + 1] = id[d] end
  end
  local state = {}
  local function visit(n)
    state[n] = 1
    for _, d in ipairs(n.deps) do
      if state[d] == 1 then
        return ("CTA %d's unit %d (tile %d, k %d..%d) waits, through a chain, on itself"):format(n.c, n.i, n.u.tile, n.u.k_begin, n.u.k_end)
      end
      if not state[d] then local r = visit(d) if r then return r end end
    end
    state[n] = 2
  end
  for _, n in ipairs(nodes) do if not state[n] then local r = visit(n) if r then return r end end end
end

-- The invariants a spec checks, as a list of violations (empty: none): every (tile, k-iteration)
-- done once; a tile's k-ranges contiguous, each waiting for the one before it and publishing for
-- the one after; one epilogue per tile, by the unit holding its last k-range (reduce: rank 0, and
-- every rank of a cluster doing as many units); no cycle in the wait-for graph.
function M.violations(s, per)
  per = per or M.all(s)
  local bad, seen, ranges = {}, {}, {}
  for c = 0, s.ctas - 1 do
    for _, u in ipairs(per[c]) do
      for k = u.k_begin, u.k_end - 1 do
        local key = u.tile * s.k_tiles + k
        if seen[key] then
          bad[#bad + 1] = ("tile %d k-iteration %d done by CTA %d and CTA %d"):format(u.tile, k, seen[key], c)
        end
        seen[key] = c
      end
      ranges[u.tile] = ranges[u.tile] or {}
      table.insert(ranges[u.tile], u)
    end
  end
  local reduce = s.mode == "reduce"
  for t = 0, s.tiles - 1 do
    local rs = ranges[t] or {}
    table.sort(rs, function(x, y) return x.k_begin < y.k_begin end)
    local at, epilogues = 0, 0
    for j, u in ipairs(rs) do
      local what = ("tile %d: k-range %d..%d"):format(t, u.k_begin, u.k_end)
      if u.k_begin ~= at then bad[#bad + 1] = ("%s starts where the one before ends, at %d"):format(what, at) end
      at = u.k_end
      if u.epilogue then epilogues = epilogues + 1 end
      if not reduce and u.wait ~= (j > 1) then
        bad[#bad + 1] = ("%s %s"):format(what, u.wait and "waits with nothing before it" or "does not wait for the partial before it")
      end
      if not reduce and u.publish ~= (j < #rs) then
        bad[#bad + 1] = ("%s %s"):format(what, u.publish and "publishes with no one after it" or "does not publish for the one after it")
      end
      if u.epilogue ~= (reduce and j == 1 or not reduce and j == #rs) then
        bad[#bad + 1] = ("%s %s"):format(what, u.epilogue and "writes the output but is not the last" or "is the last but writes no output")
      end
    end
    if at ~= s.k_tiles then bad[#bad + 1] = ("tile %d: k-iterations %d..%d done by no CTA"):format(t, at, s.k_tiles) end
    if epilogues ~= 1 then bad[#bad + 1] = ("tile %d: %d epilogues (one expected)"):format(t, epilogues) end
  end
  if reduce then
    for c = 0, s.ctas - 1 do
      local r0 = c - c % s.cluster
      if #per[c] ~= #per[r0] then
        bad[#bad + 1] = ("CTA %d does %d units but rank 0 of its cluster (CTA %d) does %d: a cluster sync would hang"):format(c, #per[c], r0, #per[r0])
      end
    end
  end
  local why = cycle(s, per, function(n)
    if reduce then
      local out, r0 = {}, n.c - n.c % s.cluster
      for p = r0, r0 + s.cluster - 1 do
        if p ~= n.c and per[p][n.i - 1] then out[#out + 1] = per[p][n.i - 1] end
      end
      return out
    end
    if not n.u.wait then return {} end
    for _, u in ipairs(ranges[n.u.tile]) do if u.k_end == n.u.k_begin then return { u } end end
    return {}
  end)
  if why then bad[#bad + 1] = why end
  return bad
end

-- Load balance, in k-iterations per CTA, and the fix-up traffic.
function M.balance(s, per)
  per = per or M.all(s)
  local most, least, total, waits, publishes, split_tiles = 0, math.huge, 0, 0, 0, {}
  for c = 0, s.ctas - 1 do
    local w = 0
    for _, u in ipairs(per[c]) do
      w = w + u.k_end - u.k_begin
      if u.wait then waits = waits + 1 end
      if u.publish then publishes = publishes + 1; split_tiles[u.tile] = true end
    end
    most, least, total = max(most, w), min(least, w), total + w
  end
  local n = 0
  for _ in pairs(split_tiles) do n = n + 1 end
  -- efficiency: the k-iterations done over what the busiest CTA's time would allow every SM
  return { max = most, min = least, total = total, ctas = s.ctas, mean = total / s.ctas, waits = waits,
           publishes = publishes, split_tiles = n, efficiency = total / (most * s.sms) }
end

return M
