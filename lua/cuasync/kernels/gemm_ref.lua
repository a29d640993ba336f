-- The GEMM's checks and yardstick (kernels/gemm.lua re-exports them): kernels-src/gemm_ref.cu's
-- reference C = A * B^T (bf16 in, f32 out), random bf16 data, the device-side comparison (f32 or
-- bf16 output against the f32 reference), and cuBLAS on the same inputs (f32 or bf16 out).
local ffi = require("ffi")
local program = require("cuasync.program")
local native = require("cuasync.native")
local buffer = require("cuasync.buffer")
local util = require("cuasync.util")
require("cuasync.cdef.blas")

local M = {}

-- The tolerance a GEMM's output is verified with: |got - want| <= atol + rtol |want|. bf16 output
-- adds its own rounding: half a unit in the last place of an 8-bit significand, 2^-8 relative.
M.TOLERANCE = { f32 = { atol = 1e-2, rtol = 1e-3 }, bf16 = { atol = 1e-2, rtol = 1e-3 + 2 ^ -8 } }
M.OUT_BYTES = { f32 = 4, bf16 = 2 }

-- The helpers of kernels-src/gemm_ref.cu, compiled once.
local helpers
function M.helpers()
  if helpers then return helpers end
  local mod = program.new{ file = "gemm_ref.cu" }:compile()
  helpers = { ref = mod:kernel("gemm_ref", "ptr, ptr, ptr, u32, u32, u32"), fill = mod:kernel("fill_bf16", "ptr, u64, u32"),
              compare = mod:kernel("compare_f32", "ptr, ptr, u64, f32, f32, ptr"),
              compare_bf16 = mod:kernel("compare_bf16", "ptr, ptr, u64, f32, f32, ptr"), out = buffer.alloc(8) }
  return helpers
end

-- Fresh random bf16 in [-1, 1) into buf (n elements) from seed.
function M.random(buf, n, seed)
  M.helpers().fill:launch({ grid = 1024, block = 256 }, buf, n, seed % 2 ^ 32)
end

function M.reference(a, b, c, m, n, k)
  M.helpers().ref:launch({ grid = { math.ceil(n / 32), math.ceil(m / 32) }, block = { 32, 32 } }, a, b, c, m, n, k)
end

-- The elements of got (n of them, f32, or bf16 with out = "bf16") outside atol + rtol * |want|
-- (want: f32), and the largest difference.
function M.compare(got, want, n, atol, rtol, out)
  local h = M.helpers()
  h.out:fill(0)
  local k = out == "bf16" and h.compare_bf16 or h.compare
  k:launch({ grid = 1024, block = 256 }, got, want, n, atol, rtol, h.out)
  local r = h.out:download("uint32_t", 2)
  return r[0], ffi.cast("float *", r + 1)[0]   -- word 1 holds the float's bits
end

-- cuBLAS on the same inputs (the yardstick): C = A * B^T, bf16 in, f32 accumulate, f32 out (or
-- bf16 with out = "bf16").
function M.cublas(a, b, c, m, n, k, out)
  local where = "gemm.cublas"
  if out ~= nil and out ~= "f32" and out ~= "bf16" then
    util.fail(where, ('out must be "f32" or "bf16" (got %s)'):format(util.describe(out)))
  end
  local f = out == "bf16" and native.C.cuasync_blas_gemm_bf16_tn_bf16 or native.C.cuasync_blas_gemm_bf16_tn
  native.check_as(where, f(buffer.memory(where, "a", a), buffer.memory(where, "b", b), buffer.memory(where, "c", c), m, n, k,
    native.errbuf, native.ERRLEN))
end

return M
