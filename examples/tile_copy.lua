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
local ffi = require("ffi")
local cuasync = require("cuasync")
local random = dofile((arg[0]:match("^(.*)/[^/]*$") or ".") .. "/_random.lua")

local opts = { width = 16384, height = 16384, box_bytes = "4096,8192", inflight = 40960, reps = 10, rounds = 5 }
local i = 1
while i <= #arg do
  local k = arg[i]:match("^%-%-(.+)$")
  if not k or opts[k] == nil or arg[i + 1] == nil then
    io.stderr:write("usage: tile_copy.lua [--width N] [--height N] [--box_bytes 4096,8192] [--inflight N] [--reps N] [--rounds N]\n")
    os.exit(2)
  end
  opts[k] = type(opts[k]) == "number" and tonumber(arg[i + 1]) or arg[i + 1]
  i = i + 2
end
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
      local prog = cuasync.program{ file = "tile_copy.cu", defines = { STAGES = stages, STAGE_BYTES = math.ceil(bb / 1024) * 1024 } }
      variants[#variants + 1] = { label = label, mode = mode, bx = bx, by = by, stages = stages, box_bytes = bb,
        mod = prog:compile(),
        smem = stages * math.ceil(bb / 1024) * 1024, times = {} }
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
local host = cuasync.host_alloc(bytes)
random.fill(host.ptr, bytes / 8)
local src, dst = cuasync.alloc(bytes), cuasync.alloc(bytes)
src:upload(host)
local back = cuasync.host_alloc(bytes)
pcall(ffi.cdef, "int memcmp(const void *a, const void *b, size_t n);")
local function verify(label)
  ffi.fill(back.ptr, bytes, 0)
  dst:download_to(back)
  if ffi.C.memcmp(back.ptr, host.ptr, bytes) ~= 0 then error(label .. ": the copy differs from the source", 0) end
end
local function gbps(ms) return 2 * bytes / (ms * 1e6) end

local base = { label = "cuMemcpyDtoD", run = function() dst:upload(src) end, times = {} }
dst:fill(0xA5); base.run(); verify(base.label)
for _, v in ipairs(variants) do
  local tin = cuasync.tensormap{ buffer = src, dtype = "f32", dims = { W, Hh }, box = { v.bx, v.by }, swizzle = v.mode }
  local tout = cuasync.tensormap{ buffer = dst, dtype = "f32", dims = { W, Hh }, box = { v.bx, v.by }, swizzle = v.mode }
  v.k = v.mod:kernel("tile_copy", "tensormap, tensormap, u32, u32, u32, u32, u32")
  local tiles_x = W / v.bx
  local tiles = tiles_x * (Hh / v.by)
  v.run = v.k:prepare({ grid = dev.sms, block = 32, smem = v.smem }, tin, tout, tiles_x, tiles, tin.box_bytes, v.bx, v.by)
  v.maps = { tin, tout }
  dst:fill(0xA5); v.run(); cuasync.synchronize(); verify(v.label)
end
for _ = 1, opts.rounds do
  for _, v in ipairs({ base, unpack(variants) }) do
    v.times[#v.times + 1] = cuasync.bench(v.run, { warmup = 2, reps = opts.reps }).median
  end
end

local base_ms = cuasync.median(base.times)
print(("%-44s %8.3f ms %8.1f GB/s   1.000"):format(base.label, base_ms, gbps(base_ms)))
local best
for _, v in ipairs(variants) do
  local ms = cuasync.median(v.times)
  local ratio = base_ms / ms
  print(("%-44s %8.3f ms %8.1f GB/s   %.3f  (verified)"):format(v.label, ms, gbps(ms), ratio))
  if not best or ratio > best.ratio then best = { label = v.label, ratio = ratio } end
end
if best then print(("best: %s at %.3f of cuMemcpyDtoD"):format(best.label, best.ratio)) end
host:close(); back:close(); src:close(); dst:close()
