-- The GEMM's tensor maps (kernels/gemm.lua): A's and B's loads and the map C leaves through.
local tensormap = require("cuasync.tensormap")
local util = require("cuasync.util")
local ref = require("cuasync.kernels.gemm_ref")

local M = {}
M.BK = 64           -- a load box's K extent: 64 bf16, one 128B swizzle span
M.CHUNK_COLS = 32   -- the TMA epilogue's 64 x 32 chunks of C (kernels-src/gemm_tma.cu)
-- l2_promotion's values: the tensor map's (none is the driver's default and the plan's).
M.L2_PROMOTIONS = { none = true, ["64B"] = true, ["128B"] = true, ["256B"] = true }

-- maps.loader(l2) -> map(buf, rows, k, box_rows): the A or B map, rows x K bf16, boxes of 64 (K) x
-- box_rows, the 128B swizzle, L2 promotion l2 (checked here, before any map or compile). Without a
-- buffer, a plan-only map (no driver needed: plans, pruning and compiles).
function M.loader(l2)
  if not M.L2_PROMOTIONS[l2] then
    util.fail("gemm", ('l2_promotion must be "none", "64B", "128B" or "256B" (the L2 sector promotion of A\'s and B\'s loads; got %s)'):format(
      util.describe(l2)))
  end
  return function(buf, rows, k, box_rows)
    if k % 8 ~= 0 then util.fail("gemm", ("k = %d must be a multiple of 8 (a row of A and B is then 16-byte aligned)"):format(k)) end
    return tensormap.new{ buffer = buf, ptr = not buf and 256 or nil, bytes = not buf and rows * k * 2 or nil,
      encode = buf ~= nil, dtype = "bf16", dims = { k, rows }, box = { M.BK, box_rows }, swizzle = "128B", load_only = true,
      l2_promotion = l2 }
  end
end

-- The map the TMA epilogue stores C through (m x n of P.out, boxes of 32 x 64, swizzled as the
-- kernels stage a chunk unless ablated); for the direct epilogue, a 1D map of C only passed along
-- (never stored through; any n). Without the buffer c, a plan-only map, as the loader's (a CPU spec
-- reads its swizzle).
function M.c_map(P, c)
  local dtype = P.out or "f32"
  local bytes = not c and P.m * P.n * ref.OUT_BYTES[dtype] or nil
  if P.epilogue ~= "tma" then
    return tensormap.new{ buffer = c, ptr = not c and 256 or nil, bytes = bytes, encode = c ~= nil,
      dtype = dtype, dims = { P.m * P.n }, box = { M.CHUNK_COLS }, load_only = true }
  end
  -- a chunk row is one span, as kernels-src/cuasync/epilogue.cuh's stage_chunk stages it
  local span = M.CHUNK_COLS * ref.OUT_BYTES[dtype]
  local swz = (P.ablate or {}).plain_c and "none" or span .. "B"
  return tensormap.new{ buffer = c, ptr = not c and 256 or nil, bytes = bytes, encode = c ~= nil,
    dtype = dtype, dims = { P.n, P.m }, box = { M.CHUNK_COLS, 64 }, swizzle = swz }
end

return M
