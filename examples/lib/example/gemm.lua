-- example.gemm(m, n, k), shared by the GEMM examples: fresh random bf16 A (m x k) and B (n x k),
-- the reference C = A B^T in r (gemm_ref.cu), and an output c; verify() compares c with r on the
-- device (|got - want| <= 1e-2 + 1e-3 |want|) and returns ok, why.
local cuasync = require("cuasync")
local gemm = require("cuasync.kernels.gemm")

return function(m, n, k)
  local d = { a = cuasync.alloc(m * k * 2), b = cuasync.alloc(n * k * 2), c = cuasync.alloc(m * n * 4), r = cuasync.alloc(m * n * 4) }
  local seed = tonumber(cuasync.now_ns() % 2 ^ 31)
  gemm.random(d.a, m * k, seed)
  gemm.random(d.b, n * k, seed + 7919)
  gemm.reference(d.a, d.b, d.r, m, n, k)
  cuasync.synchronize()
  function d.verify()
    local bad, worst = gemm.compare(d.c, d.r, m * n, 1e-2, 1e-3)
    return bad == 0, ("%d of %d elements off the reference (largest difference %.3g)"):format(bad, m * n, worst)
  end
  return d
end
