-- strategy = "exhaustive": every candidate point, in the space's order. Without a budget all in
-- one batch (every variant timed in the same interleaved rounds); with one, in batches, so that
-- a time budget is looked at between them.
return function(ctx)
  local pos = 1
  return {
    next = function()
      if pos > #ctx.candidates then return nil end
      local size = ctx.batch or #ctx.candidates
      local out = {}
      for i = pos, math.min(#ctx.candidates, pos + size - 1) do out[#out + 1] = ctx.candidates[i] end
      pos = pos + #out
      return out
    end,
  }
end
