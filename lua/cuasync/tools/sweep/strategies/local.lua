-- strategy = "local": greedy neighbourhood search. From a start point it evaluates the unseen
-- neighbours (one parameter one value up or down: Space:neighbours) in one batch and moves to the
-- best of them while that improves; at a local optimum it restarts, alternately from a kick of
-- the best point so far (two parameters moved) and from a random unseen point. A point is never
-- evaluated twice; the search ends when no unseen candidate is left (or the budget does).
return function(ctx)
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
          if not s then return nil end
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
