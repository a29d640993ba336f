-- The CPU reference of kernels-src/graph_loop.cu's Jacobi loop (the graph specs' GPU parts):
-- the same sweeps in float until the residual is at most tol or max_iters ran.
--   local jacobi = require("support.jacobi"); local sweeps, x = jacobi(x0, n, tol, max_iters)
local ffi = require("ffi")

return function(x0, n, tol, max_iters)
  local x, y = ffi.new("float[?]", n), ffi.new("float[?]", n)
  ffi.copy(x, x0, n * 4)
  local iters = 0
  while true do
    local r = 0
    for i = 0, n - 1 do
      if i == 0 or i == n - 1 then y[i] = x[i] else y[i] = 0.5 * (x[i - 1] + x[i + 1]) end
      r = math.max(r, math.abs(ffi.new("float[1]", y[i] - x[i])[0]))
    end
    iters = iters + 1
    x, y = y, x
    if not (r > tol and iters < max_iters) then return iters, x end
  end
end
