-- example.gemm(m, n, k), shared by the GEMM examples: fresh random bf16 A (m x k) and B (n x k) in
-- [-1, 1), the reference C = A B^T in r (gemm_ref.cu), and an output c; verify() compares c with r
-- on the device (cuasync.compare: |got - want| <= 1e-2 + 1e-3 |want|) and returns ok, why.
local cuasync = require("cuasync")
local gemm = require("cuasync.kernels.gemm")
local random = require("example.random")

return function(m, n, k)
  local d = { a = cuasync.alloc(m * k * 2), b = cuasync.alloc(n * k * 2), c = cuasync.alloc(m * n * 4), r = cuasync.alloc(m * n * 4) }
  d.a:fill_random{ dtype = "bf16", seed = random.seed() }
  d.b:fill_random{ dtype = "bf16", seed = random.seed() }
  gemm.reference(d.a, d.b, d.r, m, n, k)
  cuasync.synchronize()
  function d.verify() return cuasync.compare(d.c, d.r, { dtype = "f32", atol = 1e-2, rtol = 1e-3 }) end
  return d
end
