-- tile_copy.lua: copy a large f32 matrix tile by tile through shared memory with 2D tensor loads
-- and stores (kernels-src/tile_copy.cu), as a cuasync.sweep over swizzle mode x box bytes: a box
-- is `span` bytes wide (the swizzle span; 1024 bytes for none) and box_bytes / width rows tall;
-- stages = inflight / box_bytes, one block per SM. Each variant verified byte for byte, then GB/s
-- (read + written) beside cuMemcpyDtoD in interleaved rounds (median of round medians).
--   luajit examples/tile_copy.lua [--width 16384] [--height 16384] [--box_bytes 4096,8192]
--                                 [--inflight 40960] [--reps 10] [--rounds 5]
--   luajit bin/cuasync sweep examples/tile_copy.lua [the same] [--param swizzle=none,128B] ...
-- With no GPU it compiles every variant and says that the launches were skipped.
package.path = (debug.getinfo(1, "S").source:match("^@(.*)/") or ".") .. "/lib/?.lua;" .. package.path
require("example.checkout")   -- examples/lib/: this checkout's lua/ and build/ first on the paths
local cuasync = require("cuasync")
local cli = require("cuasync.tools.cli")
local copy_data = require("example.copy")
local o = cli.script{ sweep = true, options = {
  { "--width N", "the matrix's width, floats", default = 16384 }, { "--height N", "its height", default = 16384 },
  { "--box_bytes LIST", "bytes per box", default = { 4096, 8192 } },
  { "--inflight N", "bytes in flight per SM (stages = inflight / box_bytes, one block per SM)", default = 40960 },
  { "--rounds N", "interleaved rounds", default = 5 }, { "--reps N", "launches timed per round", default = 10 },
} }
local W, Hh = o.width, o.height
local bytes = W * Hh * 4
-- box row bytes per mode: the swizzle span, 1024 without one
local function width(mode) return cuasync.swizzle.SPAN[mode] > 0 and cuasync.swizzle.SPAN[mode] or 1024 end
local function shape(p)   -- box {bx, by}, stages, and the ring (1024-aligned stages: the 128B swizzle's repeat)
  local bx, by = width(p.swizzle) / 4, p.box_bytes / width(p.swizzle)
  local stages = math.floor(o.inflight / p.box_bytes)
  return bx, by, stages, cuasync.model.ring.plan{ stages = math.max(1, stages), stage_bytes = p.box_bytes, align = 1024 }
end
local cp
local function buffers() cp = cp or copy_data(bytes) return cp end

local S = cuasync.sweep{
  name = "tile_copy", order = { "box_bytes", "swizzle" }, rounds = o.rounds, reps = o.reps,
  params = { swizzle = { "none", "32B", "64B", "128B" }, box_bytes = o.box_bytes },
  where = function(p)
    local bx, by, stages = shape(p)
    if by > 256 or by < 1 or by ~= math.floor(by) then return false, ("box rows %s outside 1..256"):format(by) end
    if stages < 2 then return false, "fewer than 2 stages fit the bytes in flight" end
    if W % bx ~= 0 or Hh % by ~= 0 then return false, "the matrix is not a whole number of boxes" end
    return true
  end,
  program = function(p)
    local _, _, stages, ring = shape(p)
    return cuasync.program{ file = "tile_copy.cu", defines = { STAGES = stages, STAGE_BYTES = ring.pitch } }
  end,
  build = function(p)
    local bx, by, stages, ring = shape(p)
    local c, dev = buffers(), cuasync.current_device()
    local tin = cuasync.tensormap{ buffer = c.src, dtype = "f32", dims = { W, Hh }, box = { bx, by }, swizzle = p.swizzle }
    local tout = cuasync.tensormap{ buffer = c.dst, dtype = "f32", dims = { W, Hh }, box = { bx, by }, swizzle = p.swizzle }
    local k = cuasync.program{ file = "tile_copy.cu", defines = { STAGES = stages, STAGE_BYTES = ring.pitch } }:compile()
      :kernel("tile_copy", "tensormap, tensormap, u32, u32, u32, u32, u32")
    local tiles_x = W / bx
    return { run = k:prepare({ grid = dev.sms, block = 32, smem = ring.smem }, tin, tout, tiles_x, tiles_x * (Hh / by),
                             tin.box_bytes, bx, by),
             bytes = 2 * bytes, poison = function() c.dst:poison() end,
             verify = function() c.verify("tile_copy") return true end }
  end,
  baseline = { name = "cuMemcpyDtoD", run = function() buffers().base.run() end, bytes = 2 * bytes },
}
if not cuasync.sweep.main() then return S end   -- `cuasync sweep` runs it, with its options
S:run():print()
