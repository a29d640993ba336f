-- The in-process runner: the batch built, verified and timed here, on the current GPU (or, for
-- a host sweep, with the host clock), every variant beside the baseline in interleaved rounds.
local measure = require("cuasync.tools.sweep.measure")

local M = { name = "process" }

-- rows: compiled rows still "measured"; o = { step, gpu, best_cost }. Returns rows, baseline.
function M.run(S, rows, o)
  return rows, measure.measure(S, rows, o.step, o.gpu, o.best_cost)
end

return M
