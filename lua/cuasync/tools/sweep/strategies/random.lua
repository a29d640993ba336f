-- strategy = "random": the candidates in an order drawn from the seed, in batches; with a points
-- budget, a uniform sample of that many.
return function(ctx)
  local order = {}
  for i, c in ipairs(ctx.candidates) do order[i] = c end
  ctx.rng:shuffle(order)
  local pos = 1
  return {
    next = function()
      if pos > #order then return nil end
      local out = {}
      for i = pos, math.min(#order, pos + (ctx.batch or 16) - 1) do out[#out + 1] = order[i] end
      pos = pos + #out
      return out
    end,
  }
end
