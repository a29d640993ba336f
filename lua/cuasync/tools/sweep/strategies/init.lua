-- The search strategies, loaded by name (strategies/<name>.lua) like the report handlers: a new
-- strategy is one file and one line below. A strategy is a function(ctx) -> { next(seen) }
-- returning the next batch of candidate indices (nil when it is done); ctx = { candidates,
-- space, rng, batch, measures (false: nothing gets a figure in this run), why (then: why not),
-- note(text) (a line for the run's notes) }. seen[i] is the figure of an evaluated point
-- (false: it failed, or was not measured).
local M = {}

-- name -> what it does (the usage text shows these; the rule for a name is in ../rules.lua).
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

-- The chooser of a strategy: ctor(ctx) -> { next = fn }.
function M.load(name)
  return require("cuasync.tools.sweep.strategies." .. (ALIAS[name] or name))
end

return M
