-- tile_transpose.lua: transpose an N x N f32 matrix with 2D tensor loads and stores, one 32 x 32
-- tile per block (kernels-src/tile_transpose.cu), as a cuasync.sweep over the shared-memory layout
-- of the tiles (unswizzled, 128B swizzle): each verified element by element against a CPU
-- transpose, timed beside cuMemcpyDtoD of the same bytes in interleaved rounds, with the bank
-- conflicts of the column reads stated from cuasync.swizzle.
--   luajit examples/tile_transpose.lua [--n 8192] [--reps 10] [--rounds 5]
--   luajit bin/cuasync sweep examples/tile_transpose.lua [the same] ...
package.path = (debug.getinfo(1, "S").source:match("^@(.*)/") or ".") .. "/lib/?.lua;" .. package.path
require("example.checkout")   -- examples/lib/: this checkout's lua/ and build/ first on the paths
local ffi = require("ffi")
local cuasync = require("cuasync")
local cli = require("cuasync.tools.cli")
local copy_data = require("example.copy")
local o = cli.script{ sweep = true, options = {
  { "--n N", "the matrix is N x N floats (a multiple of 32)", default = 8192 },
  { "--rounds N", "interleaved rounds", default = 5 }, { "--reps N", "launches timed per round", default = 10 },
} }
local N = o.n
assert(N % 32 == 0 and N >= 32, "--n must be a positive multiple of 32")
local bytes = N * N * 4
local cells = {}   -- what a warp's column read costs: 32 lanes read column 7 of rows 0..31
for r = 0, 31 do cells[#cells + 1] = { 7, r } end
local function program(p)
  return cuasync.program{ file = "tile_transpose.cu", defines = { SWIZZLE_SPAN = cuasync.swizzle.SPAN[p.swizzle] } }
end
local cp
local function buffers() cp = cp or copy_data(bytes) return cp end

local S = cuasync.sweep{
  name = "tile_transpose", params = { swizzle = { "none", "128B" } }, program = program, rounds = o.rounds, reps = o.reps,
  build = function(p)
    local c = buffers()
    local tin = cuasync.tensormap{ buffer = c.src, dtype = "f32", dims = { N, N }, box = { 32, 32 }, swizzle = p.swizzle }
    local tout = cuasync.tensormap{ buffer = c.dst, dtype = "f32", dims = { N, N }, box = { 32, 32 }, swizzle = p.swizzle }
    local k = program(p):compile():kernel("tile_transpose", "tensormap, tensormap, u32")
    return { run = k:prepare({ grid = (N / 32) ^ 2, block = 256 }, tin, tout, N / 32), bytes = 2 * bytes,
      poison = function() c.dst:poison() end,
      verify = function()
        c.dst:download_to(c.back)
        local a, b = ffi.cast("uint32_t *", c.host.ptr), ffi.cast("uint32_t *", c.back.ptr)
        for y = 0, N - 1 do
          for x = 0, N - 1 do
            if b[y * N + x] ~= a[x * N + y] then
              return false, ("out(%d, %d) = 0x%x, expected in(%d, %d) = 0x%x"):format(x, y, b[y * N + x], y, x, a[x * N + y])
            end
          end
        end
        return true
      end }
  end,
  baseline = { name = "cuMemcpyDtoD", run = function() buffers().base.run() end, bytes = 2 * bytes },
}
-- After the table, both ways: what the swizzle does to a warp's column read.
local function after()
  for _, mode in ipairs({ "none", "128B" }) do
    print(("swizzle %-4s: a warp's column read is a %d-way bank conflict"):format(mode,
      cuasync.swizzle.layout(mode, { 32, 32 }, 4):bank_conflicts(cells)))
  end
end
if not cuasync.sweep.main() then return S, after end   -- `cuasync sweep` runs it, with its options
S:run():print()
after()
