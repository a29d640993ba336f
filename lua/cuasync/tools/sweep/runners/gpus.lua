-- The multi-GPU runner: the batch shared out over several GPUs, one worker process each
-- (workers.lua re-runs the sweep's script), each timing its share beside the baseline.
local workers = require("cuasync.tools.sweep.workers")

local M = { name = "gpus" }

-- rows: compiled rows still "measured"; o = { step, gpus, best_cost }. Returns rows, baseline.
function M.run(S, rows, o)
  return rows, workers.measure(S, rows, o.gpus, o.step, o.best_cost)
end

return M
