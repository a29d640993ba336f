-- strategy = "replay": every candidate, answered from the result store only (nothing is built or
-- launched; a point the store does not hold is skipped, saying so). It lets a sweep be read,
-- and strategies be compared (S:run{ strategy = "local", replay = true }), without a GPU.
local exhaustive = require("cuasync.tools.sweep.strategies.exhaustive")

return function(ctx)
  local s = exhaustive(ctx)
  s.replay = true
  return s
end
