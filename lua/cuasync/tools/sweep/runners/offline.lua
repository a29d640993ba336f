-- The runner where nothing can be launched (no GPU, no driver): every compiled row is skipped,
-- saying why once; its compile time and resources are what it has.
local row = require("cuasync.tools.sweep.row")

local M = { name = "offline" }

-- o = { why }. Returns no measured rows.
function M.run(S, rows, o)
  for _, r in ipairs(rows) do row.set(r, "skipped", "launches skipped: " .. o.why) end
  S.result.skipped_launches = o.why
  return {}
end

return M
