-- tile_copy.lua: copy a large f32 matrix tile by tile through shared memory with 2D tensor loads
-- and stores (kernels-src/tile_copy.cu), for each swizzle mode and box shape; verify every byte;
-- report GB/s (read + written) beside cuMemcpyDtoD in the same run, timed in interleaved rounds
-- (median over rounds of each round's median).
--   luajit examples/tile_copy.lua [--width 16384] [--height 16384] [--box_bytes 4096,8192]
--                                 [--inflight 40960] [--reps 10] [--rounds 5]
-- A box is `span` bytes wide (the swizzle span; 1024 bytes for none) and box_bytes / width rows
-- tall; stages = inflight / box_bytes, one block per SM. With no GPU it compiles every variant
-- and says that the launches were skipped.
dofile((arg[0]:match("^(.*)/[^/]*$") or ".") .. "/_path.lua")
local cuasync = require("cuasync")

local opts = dofile((arg[0]:match("^(.*)/[^/]*$") or ".") .. "/_args.lua")({ width = 16384, height = 16384, box_bytes = "4096,8192", inflight = 40960, reps = 10, rounds = 5 },
  "tile_copy.lua [--width N] [--height N] [--box_bytes 4096,8192] [--inflight N] [--reps N] [--rounds N]")
local W, Hh = opts.width, opts.height
local bytes = W * Hh * 4
local WIDTH = { none = 1024, ["32B"] = 32, ["64B"] = 64, ["128B"] = 128 }   -- box row bytes per mode

local variants = {}
for bb in tostring(opts.box_bytes):gmatch("%d+") do
  bb = tonumber(bb)
  for _, mode in ipairs({ "none", "32B", "64B", "128B" }) do
    local bx = WIDTH[mode] / 4
    local by = bb / WIDTH[mode]
    local stages = math.floor(opts.inflight / bb)
    local label = ("swizzle %-4s box {%d, %d} %d B x %d stages"):format(mode, bx, by, bb, stages)
    if by > 256 or by < 1 or stages < 2 or W % bx ~= 0 or Hh % by ~= 0 then
      print(label .. ": skipped (box rows 1..256, 2+ stages, and the matrix a whole number of boxes)")
    else
      -- stages 1024-aligned (the 128B swizzle's repeat): the ring's arithmetic, written once
      local ring = cuasync.model.ring.plan{ stages = stages, stage_bytes = bb, align = 1024 }
      local prog = cuasync.program{ file = "tile_copy.cu", defines = { STAGES = stages, STAGE_BYTES = ring.pitch } }
      variants[#variants + 1] = { label = label, mode = mode, bx = bx, by = by, stages = stages, box_bytes = bb,
        mod = prog:compile(), smem = ring.smem, times = {} }
    end
  end
end

local ok, why = cuasync.available()
if not ok then
  for _, v in ipairs(variants) do
    print(("compiled %s for %s: cubin %d bytes"):format(v.label, v.mod.arch, #v.mod:cubin()))
  end
  print("launches skipped: " .. why)
  return
end

local dev = cuasync.device(0)
print(("%s, %d SMs; copying a %d x %d f32 matrix (%.2f GiB); %d rounds of %d launches (median of round medians)"):format(
  dev.name, dev.sms, W, Hh, bytes / 2 ^ 30, opts.rounds, opts.reps))
local cp = dofile((arg[0]:match("^(.*)/[^/]*$") or ".") .. "/_copy.lua")(bytes)
local base, gbps = cp.base, cp.gbps
cp.check(base.label, base.run)
for _, v in ipairs(variants) do
  local tin = cuasync.tensormap{ buffer = cp.src, dtype = "f32", dims = { W, Hh }, box = { v.bx, v.by }, swizzle = v.mode }
  local tout = cuasync.tensormap{ buffer = cp.dst, dtype = "f32", dims = { W, Hh }, box = { v.bx, v.by }, swizzle = v.mode }
  v.k = v.mod:kernel("tile_copy", "tensormap, tensormap, u32, u32, u32, u32, u32")
  local tiles_x = W / v.bx
  local tiles = tiles_x * (Hh / v.by)
  v.run = v.k:prepare({ grid = dev.sms, block = 32, smem = v.smem }, tin, tout, tiles_x, tiles, tin.box_bytes, v.bx, v.by)
  v.maps = { tin, tout }
  cp.check(v.label, v.run)
end
cuasync.bench_rounds({ base, unpack(variants) }, { rounds = opts.rounds, reps = opts.reps })

local base_ms = base.ms
print(("%-44s %8.3f ms %8.1f GB/s   1.000"):format(base.label, base_ms, gbps(base_ms)))
local best
for _, v in ipairs(variants) do
  local ms = v.ms
  local ratio = base_ms / ms
  print(("%-44s %8.3f ms %8.1f GB/s   %.3f  (verified)"):format(v.label, ms, gbps(ms), ratio))
  if not best or ratio > best.ratio then best = { label = v.label, ratio = ratio } end
end
if best then print(("best: %s at %.3f of cuMemcpyDtoD"):format(best.label, best.ratio)) end
cp.close()
