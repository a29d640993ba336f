-- model.run's result: ok, or the fault with each role's timeline and every barrier's state, and
-- report() putting it in words. Pure Lua.
local M = {}

local Result = {}
Result.__index = Result

-- The counterexample in words: the fault, each role's last steps (ending at its blocking wait),
-- and every barrier's state. `tail` limits the steps shown per role (default 8).
function Result:report(tail)
  if self.ok and self.complete == false then   -- stopped at its bound: no fault found, nothing proven
    return ("incomplete: %d runs (exhaustive, bound reached before every interleaving), no fault found in them: not a proof (raise bound)"):format(self.runs)
  end
  if self.ok then
    return ("ok: %d run%s (%s%s), no fault"):format(self.runs, self.runs == 1 and "" or "s", self.explore,
      self.explore == "exhaustive" and (self.exhausted and ", every interleaving" or ", bound reached") or
      (", seed %d"):format(self.seed))
  end
  tail = tail or 8
  local out = { ("%s in run %d of %s exploration (seed %d), step %d:"):format(self.kind, self.run, self.explore,
    self.seed, self.steps), "  " .. self.message }
  -- a plan's simulate places the barrier as the watchdog's hang message does (barrier_names)
  if self.at then out[#out + 1] = "  at " .. self.at end
  out[#out + 1] = "timeline:"
  for _, name in ipairs(self.order) do
    local log = self.timeline[name]
    out[#out + 1] = "  " .. name .. ":"
    if #log > tail then out[#out + 1] = ("    ... %d earlier steps"):format(#log - tail) end
    for i = math.max(1, #log - tail + 1), #log do out[#out + 1] = "    " .. log[i] end
  end
  out[#out + 1] = "barriers:"
  for _, name in ipairs(self.barrier_order) do
    out[#out + 1] = ("  %-12s %s"):format(name, self.barriers[name])
  end
  return table.concat(out, "\n")
end
Result.__tostring = Result.report
M.Result = Result

-- A result before any run: ok until a run finds a fault.
function M.new(spec)
  return setmetatable({ ok = true, runs = 0, explore = spec.explore, seed = spec.seed }, Result)
end

return M
