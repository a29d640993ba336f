-- The attention forward's persistent axis (kernels/attention.lua, attention.plan{ persistent = true }):
-- the cuasync.scheduler named "attn_sched" whose tiles kernels-src/attention_fwd.cu walks (its unit_at).
-- A work unit is one q tile of one head: the scheduler's tile grid is m = s rows in tiles of q_tile
-- (tile rows: the q tiles) by n = b*h columns in tiles of 1 (tile columns: the heads). CTA c takes
-- one unit of each round of G (G = the grid, min(units, sms)) in the scheduler's raster order, the
-- c-th (causal: every other round the (G - 1 - c)-th, M.tile_of):
--   raster = tiles_m, causal or not: a head's q tiles one after another (the default grid's order:
--     blockIdx.x, the q tile, fastest), so that the blocks running at once read few heads' K and V
--     and those stay in L2; causal, the kernel reverses the rows (row r is q tile tiles_m - 1 - r),
--     so each head's longest q tile comes first. Causal with raster = 1 instead (every head's q
--     tile of one row before the next row's: longest first over all heads) read 3-5% below the
--     default grid on the H200 and this order 2-5% above it (docs/attention.md, section 5).
-- sms: the plan's field, else the open device's SM count, else 132 (an H100 or H200 SXM): as the
-- GEMM's scheduler (kernels/gemm_sched.lua). A grid of 132 on a device with fewer SMs is still
-- correct (the walk covers every unit on any grid), only a second partial wave.
local util = require("cuasync.util")
local errors = require("cuasync.errors")
local scheduler = require("cuasync.scheduler")
local device = require("cuasync.device")
local model = require("cuasync.model.attention")
local T = require("cuasync.model.tile_scheduler")

local M = {}
M.NAME = "attn_sched"   -- <cuasync/schedulers/attn_sched.cuh>
M.SMS = 132             -- the SM count of a plan made where no GPU is open
M.MAX_UNITS = 2 ^ 31 - 2   -- the scheduler's count (tiles x k-tiles below 2^31 - 1), and the head index
                           -- a tensor copy takes as a signed 32-bit coordinate

-- The scheduler of the checked problem p (model/attention.check), refused by rule in attention's words.
function M.new(p)
  local dev = device.peek()
  local sms = p.sms or (dev and dev.sms) or M.SMS
  local q_rows = math.ceil(p.s / p.q_tile)
  local units = p.b * p.h * q_rows
  if units > M.MAX_UNITS then
    util.fail("attention", ("persistent = true: b x h x q tiles = %d x %d x %d = %d units, more than the device walk counts (%d)"):format(
      p.b, p.h, q_rows, units, M.MAX_UNITS))
  end
  -- An s shorter than a tile is one tile (the loads zero-fill, the stores clip). k is one k-tile:
  -- the kernel takes a unit whole and counts its kv tiles itself (causal: fewer), so the walk's
  -- k-iterations are not the attention's.
  local ok, s = pcall(scheduler.new, { name = M.NAME, kind = "persistent", m = math.max(p.s, p.q_tile), n = p.b * p.h,
    k = p.kv_tile, tile = { p.q_tile, 1 }, bk = p.kv_tile, raster = q_rows, sms = sms })
  if not ok then
    util.fail("attention", ("persistent = true: %s"):format((errors.message(s):gsub("^cuasync%.scheduler: ", ""))))
  end
  return s
end

-- The scheduler's tile that block c of a grid of g takes as its unit u (0-based), or nil past
-- its last: round u is tiles u g .. u g + g - 1; causal, every other round in reverse block order
-- (a snake: round robin left the busiest block 12.5% over the mean kv tiles on 4 x 16 x 4096, the
-- snake 3.1%). attention_fwd.cu's unit_at.
function M.tile_of(S, causal, c, u)
  local g = S.ctas
  local i = u * g + ((causal and u % 2 == 1) and g - 1 - c or c)
  if i >= S.tiles then return nil end
  return i
end

-- CTA c's units in the kernel's order: { bh, q0, tiles } (tiles: the kv tiles it reads).
function M.units(P, c)
  local p, S = P.problem, P.sched
  util.int_in("attention.units", "c", c, 0, S.ctas - 1)
  local out = {}
  local u = 0
  while true do
    local i = M.tile_of(S, p.causal, c, u)
    if not i then break end
    local r, col = T.tile_at(S, i)
    local q0 = (p.causal and S.tiles_m - 1 - r or r) * p.q_tile
    out[#out + 1] = { bh = col, q0 = q0, tiles = model.kv_tiles(p.s, q0, p.q_tile, p.kv_tile, p.causal) }
    u = u + 1
  end
  return out
end

-- The grid: sched.ctas blocks (min(units, sms)), one per SM at most.
function M.launch_config(P, dev)
  return P.sched:launch_config(P:check(dev):launch_config{ grid = P.sched.ctas })
end

return M
