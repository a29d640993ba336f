-- The GEMM specs' GPU check (gemm_sched_spec, gemm_bn192_spec): plan P on buffers C (output) and R
-- (the reference) of an m x n problem, launched once into poisoned C; returns the elements off the
-- reference, the largest difference and the turnstile's flags left set.
local cuasync = require("cuasync")
local gemm = require("cuasync.kernels.gemm")

local M = {}

function M.launch(P, C, R, m, n)
  local kern = gemm.kernel(P)
  local work, flags = gemm.workspace(P)
  C:poison()   -- an element the kernel misses cannot pass
  kern:launch(gemm.launch_config(P, cuasync.current_device(), m, n, kern), gemm.args(P, C, work, flags))
  cuasync.synchronize()
  -- tighter than gemm.TOLERANCE (as gemm_spec's edge shapes), plus bf16's rounding
  local bad, worst = gemm.compare(C, R, m * n, 1e-3, P.out == "bf16" and 1e-4 + 2 ^ -8 or 1e-4, P.out)
  local left = 0
  if P.sched.turnstile then
    local f = flags:download("uint32_t", P.sched.slots)
    for i = 0, P.sched.slots - 1 do if f[i] ~= 0 then left = left + 1 end end
  end
  work:close(); flags:close()
  return bad, worst, left
end

return M
