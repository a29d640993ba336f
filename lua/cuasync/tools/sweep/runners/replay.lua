-- The store runner (replay = true, or strategy = "replay"): every point answered from the
-- result store's latest run on this device (or, without a GPU, the latest of any device);
-- nothing is compiled, built or launched. A point that run does not hold is skipped, saying so.
-- Kernel Tuner's simulation runner is the model: a replay is a runner, not a strategy.
local row = require("cuasync.tools.sweep.row")

local M = { name = "replay" }

-- o = { memo }. Returns no measured rows (nothing was measured now).
function M.run(_, rows, o)
  for _, r in ipairs(rows) do
    local e = o.memo:latest(r)
    if e then o.memo.fill(r, e)
    else row.set(r, "skipped", ("not in the result store's latest run on %s (strategy replay)"):format(o.memo.device_key)) end
  end
  return {}
end

return M
