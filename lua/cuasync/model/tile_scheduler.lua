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
-- (release); the one with k_end == k_tiles writes the output and resets the flag to 0. A split
-- tile's flag and partial are slot `slot` of the flags and the workspace: stream-K, tile - dp_tiles
-- (only the sk_tiles are split); serial split-K, the tile. A flag holds epoch << 20 | count (M.tag):
-- a launch waits for its own epoch's counts, so a flag an aborted launch left is never taken.
local check = require("cuasync.model.tile_scheduler_check")

local M = {}

M.KINDS = { persistent = "whole tiles, dealt round-robin to a persistent grid",
            stream_k = "the last waves' tiles cut into k-iterations dealt evenly to every SM",
            split_k = "each tile cut into n k-ranges" }
M.MODES = { serial = "a turnstile in global memory: split i adds its partial after split i - 1",
            reduce = "the splits of a tile form a cluster; rank 0 adds its peers' partials through DSMEM" }
M.MAX_CLUSTER = 8          -- portable cluster: the reduce mode's splits
M.MAX_UNITS = 2 ^ 31       -- tiles x k-tiles, counted in 32-bit on the device

M.COUNT_BITS = 20         -- a turnstile flag: epoch << 20 | the k-tiles counted
M.MAX_COUNT = 2 ^ M.COUNT_BITS - 1
M.MAX_EPOCH = 2 ^ (32 - M.COUNT_BITS) - 1   -- epochs 1..4095, then 1 again (0 is a zeroed flag's)

local floor, min, max = math.floor, math.min, math.max

-- A flag's value for `count` k-tiles in launch `epoch` (turnstile.cuh's tag), and back.
function M.tag(epoch, count) return epoch * 2 ^ M.COUNT_BITS + count end
function M.untag(v) return floor(v / 2 ^ M.COUNT_BITS), v % 2 ^ M.COUNT_BITS end
-- The epoch after e (nil: the first launch's): 1..MAX_EPOCH, never 0.
function M.next_epoch(e) return (e or 0) % M.MAX_EPOCH + 1 end
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
  -- the turnstile's flags and f32 partials: one slot a split tile
  s.turnstile = s.kind == "stream_k" or (s.kind == "split_k" and s.mode ~= "reduce")
  s.slots = s.kind == "stream_k" and s.sk_tiles or s.turnstile and s.tiles or 0
  s.flag_count, s.flag_bytes = s.slots, 4 * s.slots
  s.workspace_bytes = s.slots * s.bm * s.bn * 4
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
  if s.turnstile and s.k_tiles > M.MAX_COUNT then
    return ("%d k-tiles (k = %d in steps of bk = %d) do not fit the turnstile flag's %d-bit count (at most %d: a larger bk)"):format(
      s.k_tiles, s.k, s.bk, M.COUNT_BITS, M.MAX_COUNT)
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

-- The note for a turnstile scheduler of more CTAs than the device's SMs (device_sms), or nil. Every
-- turnstile wait is on a lower-index CTA (tile_scheduler_check), so a grid that is all resident at
-- once cannot deadlock; one that is not progresses only if blocks start in index order.
function M.dispatch_note(s, device_sms, device_name)
  if not s.turnstile or s.ctas <= device_sms then return nil end
  return ("sms = %d gives %d CTAs, more than the %d SMs of %s: the grid may not be resident all at once, and each turnstile wait is on a lower-index CTA, so it progresses only if blocks start in index order (as CUDA dispatches them today, without promising it)"):format(
    s.sms, s.ctas, device_sms, device_name or "the device")
end

-- Tile t's turnstile slot (its flag and partial), or nil: it is done whole, or has no turnstile.
function M.slot(s, t)
  if s.kind == "stream_k" then return t >= s.dp_tiles and t - s.dp_tiles or nil end
  return s.turnstile and t or nil
end

local function unit(s, t, kb, ke, split)
  local r, c = M.tile_at(s, t)
  return { tile = t, row = r, col = c, k_begin = kb, k_end = ke, split = split, slot = M.slot(s, t),
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

-- The invariants (model/tile_scheduler_check.lua): a list of violations, empty when none.
function M.violations(s, per) return check.violations(s, per or M.all(s)) end

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
