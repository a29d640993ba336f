-- tile_transpose.lua: transpose an N x N f32 matrix with 2D tensor loads and stores, one 32 x 32
-- tile per block (kernels-src/tile_transpose.cu), with the tiles in shared memory unswizzled and
-- with the 128B swizzle; verify every element against a CPU transpose; time both in the same run
-- (interleaved rounds) and state the bank conflicts of the column reads, from cuasync.swizzle.
--   luajit examples/tile_transpose.lua [--n 8192] [--reps 10] [--rounds 5]
dofile((arg[0]:match("^(.*)/[^/]*$") or ".") .. "/_path.lua")
local ffi = require("ffi")
local cuasync = require("cuasync")
local random = dofile((arg[0]:match("^(.*)/[^/]*$") or ".") .. "/_random.lua")

local opts = dofile((arg[0]:match("^(.*)/[^/]*$") or ".") .. "/_args.lua")({ n = 8192, reps = 10, rounds = 5 },
  "tile_transpose.lua [--n N (a multiple of 32)] [--reps N] [--rounds N]")
local N = opts.n
assert(N % 32 == 0 and N >= 32, "--n must be a positive multiple of 32")

-- What a warp's column read costs in each layout: 32 lanes read column c of rows 0..31.
local cells = {}
for r = 0, 31 do cells[#cells + 1] = { 7, r } end
local variants = {}
for _, mode in ipairs({ "none", "128B" }) do
  local L = cuasync.swizzle.layout(mode, { 32, 32 }, 4)
  local prog = cuasync.program{ file = "tile_transpose.cu", defines = { SWIZZLE_SPAN = cuasync.swizzle.SPAN[mode] } }
  variants[#variants + 1] = { mode = mode, conflicts = L:bank_conflicts(cells), times = {},
    mod = prog:compile() }
end

local ok, why = cuasync.available()
if not ok then
  for _, v in ipairs(variants) do
    print(("compiled tile_transpose swizzle %s for %s (column read: %d-way bank conflict)"):format(v.mode,
      v.mod.arch, v.conflicts))
  end
  print("launches skipped: " .. why)
  return
end

local dev = cuasync.device(0)
local bytes = N * N * 4
print(("%s: transposing a %d x %d f32 matrix (%.0f MiB), %d rounds of %d launches"):format(dev.name, N, N,
  bytes / 2 ^ 20, opts.rounds, opts.reps))
local host = cuasync.host_alloc(bytes)
random.fill(host.ptr, bytes / 8)
local src, dst = cuasync.alloc(bytes), cuasync.alloc(bytes)
src:upload(host)
local back = cuasync.host_alloc(bytes)
local a, b = ffi.cast("uint32_t *", host.ptr), ffi.cast("uint32_t *", back.ptr)

for _, v in ipairs(variants) do
  local tin = cuasync.tensormap{ buffer = src, dtype = "f32", dims = { N, N }, box = { 32, 32 }, swizzle = v.mode }
  local tout = cuasync.tensormap{ buffer = dst, dtype = "f32", dims = { N, N }, box = { 32, 32 }, swizzle = v.mode }
  v.maps = { tin, tout }
  v.k = v.mod:kernel("tile_transpose", "tensormap, tensormap, u32")
  v.run = v.k:prepare({ grid = (N / 32) ^ 2, block = 256 }, tin, tout, N / 32)
  dst:fill(0xA5)
  v.run()
  cuasync.synchronize()
  dst:download_to(back)
  for y = 0, N - 1 do
    for x = 0, N - 1 do
      if b[y * N + x] ~= a[x * N + y] then
        error(("swizzle %s: out(%d, %d) = 0x%x, expected in(%d, %d) = 0x%x"):format(v.mode, x, y, b[y * N + x], y, x,
              a[x * N + y]), 0)
      end
    end
  end
end
cuasync.bench_rounds(variants, { rounds = opts.rounds, reps = opts.reps })
local none_ms = variants[1].ms
for _, v in ipairs(variants) do
  local ms = v.ms
  print(("swizzle %-4s %8.3f ms %8.1f GB/s  %.2fx of no-swizzle speed  column read: %2d-way bank conflict  (verified)"):format(
    v.mode, ms, 2 * bytes / (ms * 1e6), none_ms / ms, v.conflicts))
end
print(("the 128B swizzle turns each warp's 32-way conflicted column read into %d-way: %d shared-memory wavefronts instead of 32"):format(
  variants[2].conflicts, variants[2].conflicts))
host:close(); back:close(); src:close(); dst:close()
