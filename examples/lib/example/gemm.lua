-- example.gemm(m, n, k), shared by the GEMM examples: fresh random bf16 A (m x k) and B (n x k) in
-- [-1, 1), the reference C = A B^T in r (gemm_ref.cu, f32), and an output c (room for f32);
-- verify([out]) compares c, of type out ("f32" default, or "bf16"), with r on the device within
-- gemm.TOLERANCE[out] (|got - want| <= 1e-2 + 1e-3 |want|, plus bf16's rounding) and returns ok, why.
local cuasync = require("cuasync")
local gemm = require("cuasync.kernels.gemm")
local random = require("example.random")

return function(m, n, k)
  local d = { a = cuasync.alloc(m * k * 2), b = cuasync.alloc(n * k * 2), c = cuasync.alloc(m * n * 4), r = cuasync.alloc(m * n * 4) }
  d.a:fill_random{ dtype = "bf16", seed = random.seed() }
  d.b:fill_random{ dtype = "bf16", seed = random.seed() }
  gemm.reference(d.a, d.b, d.r, m, n, k)
  cuasync.synchronize()
  function d.verify(out)
    out = out or "f32"
    local t = gemm.TOLERANCE[out]
    if out == "f32" then return cuasync.compare(d.c, d.r, { dtype = "f32", atol = t.atol, rtol = t.rtol }) end
    local bad, worst = gemm.compare(d.c, d.r, m * n, t.atol, t.rtol, out)
    if bad == 0 then return true end
    return false, ("%d of %d elements off the reference (largest difference %.3g)"):format(bad, m * n, worst)
  end
  return d
end
