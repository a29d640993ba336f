-- The search strategies, loaded by name (strategies/<name>.lua) like the report handlers: a new
-- strategy is one file and one line below. A strategy is a function(ctx) -> { next(seen) }
-- returning the next batch of candidate indices (nil when it is done); ctx = { candidates,
-- space, rng, batch }. seen[i] is the figure of an evaluated point (false: it failed).
local util = require("cuasync.util")

local M = {}

-- name -> what it does (the usage text and the error for an unknown name show these).
M.DOC = {
  exhaustive = "every candidate, in the space's order (one batch without a budget)",
  random = "the candidates in an order drawn from the seed; with a points budget, a uniform sample",
  ["local"] = "greedy neighbourhood search with restarts (kicks and random unseen points)",
  -- replay is a runner (runners/replay.lua), not a way to choose points: the name stays for
  -- scripts that say strategy = "replay", and means exhaustive + replay = true
  replay = "every candidate, answered from the result store only (same as replay = true)",
}
M.NAMES = { "exhaustive", "random", "local", "replay" }
local ALIAS = { replay = "exhaustive" }

function M.check(where, name)
  if type(name) ~= "string" or not M.DOC[name] then
    util.fail(where, ("strategy must be one of %s (got %s)"):format(table.concat(M.NAMES, ", "), util.describe(name)))
  end
  return name
end

-- The chooser of a strategy: ctor(ctx) -> { next = fn }.
function M.load(name)
  return require("cuasync.tools.sweep.strategies." .. (ALIAS[name] or name))
end

return M
