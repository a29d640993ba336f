-- strategy = "local": greedy neighbourhood search. From a start point it evaluates the unseen
-- neighbours (one parameter one value up or down: Space:neighbours) in one batch and moves to the
-- best of them while that improves; at a local optimum it restarts, alternately from a kick of
-- the best point so far (two parameters moved) and from a random unseen point. A point is never
-- evaluated twice; the search ends when no unseen candidate is left (or the budget does).
-- Without figures it cannot search: in a run that measures nothing (no GPU: a compile-only run)
-- it says so in a note and takes the candidates as strategy random does; in one where no point
-- it evaluated got a figure (each failed), it says so when it ends.
local OFFLINE = "strategy local cannot search: nothing is measured in this run (%s), so no point has a figure to climb from; it took the candidates in an order drawn from the seed instead, as strategy random does"
local random = require("cuasync.tools.sweep.strategies.random")

local NONE = "strategy local could not search: none of the %d points it evaluated got a figure (each failed, or was not measured), so it took them one at a time in an order drawn from the seed"

return function(ctx)
  if ctx.measures == false then
    if ctx.note then
      ctx.note(OFFLINE:format(ctx.why or "launches skipped"))
    end
    return random(ctx)
  end
  local space, rng = ctx.space, ctx.rng
  local valid = {}
  for _, c in ipairs(ctx.candidates) do valid[c] = true end
  local order = {}
  for i, c in ipairs(ctx.candidates) do order[i] = c end
  rng:shuffle(order)
  local pos, current, start, kick = 1, nil, nil, true
  local best

  local function better(a, b) return type(a) == "number" and (type(b) ~= "number" or a > b) end

  local function random_unseen(seen)
    while pos <= #order and seen[order[pos]] ~= nil do pos = pos + 1 end
    return order[pos]
  end

  -- an unseen valid point two parameters away from the best so far, or nil
  local function kicked(seen)
    if not best then return nil end
    local d0 = space:digits(best)
    for _ = 1, 8 do
      local d = {}
      for j, v in ipairs(d0) do d[j] = v end
      for _ = 1, 2 do
        local j = rng:int(#d)
        d[j] = rng:int(#space.params[space.order[j]])
      end
      local i = space:index(d)
      if valid[i] and seen[i] == nil then return i end
    end
  end

  return {
    next = function(_, seen)
      for _, c in ipairs(ctx.candidates) do
        if better(seen[c], best and seen[best]) then best = c end
      end
      while true do
        if start then
          current = type(seen[start]) == "number" and start or nil
          start = nil
        end
        if current == nil then
          local s = kick and kicked(seen) or nil
          kick = not kick
          s = s or random_unseen(seen)
          if not s then
            if not best and ctx.note and next(seen) ~= nil then
              local n = 0
              for _ in pairs(seen) do n = n + 1 end
              ctx.note(NONE:format(n))
            end
            return nil
          end
          start = s
          return { s }
        end
        local fresh, top = {}, nil
        for _, n in ipairs(space:neighbours(current)) do
          if valid[n] then
            if seen[n] == nil then fresh[#fresh + 1] = n
            elseif better(seen[n], top and seen[top]) then top = n end
          end
        end
        if #fresh > 0 then return fresh end
        if top and better(seen[top], seen[current]) then current = top else current = nil end
      end
    end,
  }
end
