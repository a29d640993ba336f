-- How a sweep measures, checked once: rounds (a count, or "auto": more rounds for the leaders
-- while they are tied, up to max_rounds), reps, the warm-up before the first timed round
-- (warmup_ms), the untimed runs before each variant's timed reps (settle_ms), the stability bar
-- (spread_limit), and rotated input sets (rotate). Set from the
-- sweep's definition, changed for one run by S:run{ rounds = ... }, and handed to the measure
-- workers of a multi-GPU run (method_of / apply), so that every process measures alike.
local util = require("cuasync.util")
local spread = require("cuasync.model.spread")

local M = { AUTO_START = 5, MAX_ROUNDS = 20, WARMUP_MS = 300, SETTLE_MS = 200,
            FIELDS = { "rounds", "auto_rounds", "max_rounds", "reps", "warmup_ms", "settle_ms", "spread_limit", "rotate" } }

-- rounds: a count 1..1000 or "auto"; returns the count to start with and whether auto.
function M.rounds(where, v)
  if v == "auto" then return M.AUTO_START, true end
  if v == nil then return 5, false end
  if not (util.is_integer(v) and v >= 1 and v <= 1000) then
    util.fail(where, ('rounds must be an integer in 1..1000 or "auto" (got %s)'):format(util.describe(v)))
  end
  return v, false
end

-- The method's fields of a sweep's definition, checked, set on S.
function M.set(where, S, spec)
  S.rounds, S.auto_rounds = M.rounds(where, spec.rounds)
  S.reps = util.int_in(where, "reps", spec.reps or 10, 1, 100000)
  S.max_rounds = util.int_in(where, "max_rounds", spec.max_rounds or math.max(M.MAX_ROUNDS, S.rounds), 1, 1000)
  if S.max_rounds < S.rounds then
    util.fail(where, ("max_rounds (%d) must be at least rounds (%d): it caps the rounds auto adds"):format(S.max_rounds, S.rounds))
  end
  S.warmup_ms = util.int_in(where, "warmup_ms", spec.warmup_ms or M.WARMUP_MS, 0, 60000)
  S.settle_ms = util.int_in(where, "settle_ms", spec.settle_ms or M.SETTLE_MS, 0, 60000)
  local lim = spec.spread_limit
  if lim ~= nil and (type(lim) ~= "number" or not (lim > 0 and lim < 1)) then
    util.fail(where, ("spread_limit must be a fraction in (0, 1), e.g. 0.02 for 2%% (got %s)"):format(util.describe(lim)))
  end
  S.spread_limit = lim or spread.LIMIT
  S.rotate = util.int_in(where, "rotate", spec.rotate or 1, 1, 64)
  if S.rotate > 1 and S.host then
    util.fail(where, ("rotate = %d rotates a GPU's inputs out of its L2; a host = true sweep has none"):format(S.rotate))
  end
end

-- The command's --warmup-ms and --settle-ms: S.warmup_ms or S.settle_ms replaced, by the same rule.
function M.set_ms(S, field, ms)
  S[field] = util.int_in("sweep", field, ms, 0, 60000)
end

-- S:run{ rounds = n | "auto" }: this run's rounds (the sweep's are put back after it).
function M.override(where, S, rounds)
  if rounds == nil then return function() end end
  local saved = { S.rounds, S.auto_rounds, S.max_rounds }
  S.rounds, S.auto_rounds = M.rounds(where, rounds)
  S.max_rounds = math.max(S.max_rounds, S.rounds)
  return function() S.rounds, S.auto_rounds, S.max_rounds = saved[1], saved[2], saved[3] end
end

-- The method as a worker task carries it, and a worker's S set from it.
function M.of(S)
  local t = {}
  for _, f in ipairs(M.FIELDS) do t[f] = S[f] end
  return t
end
function M.apply(S, t)
  for _, f in ipairs(M.FIELDS) do if t and t[f] ~= nil then S[f] = t[f] end end
end

return M
