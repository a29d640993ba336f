-- A host sweep for the Slurm spec (cuasync sweep spec/support/slurm_sweep.lua --slurm ...): 8
-- points of a small CPU loop. CUASYNC_SPEC_SLOW_SHARD=i makes array task i sleep in its first
-- run (long enough for the spec to cancel it).
local slow = os.getenv("CUASYNC_SPEC_SLOW_SHARD")
return { name = "slurm_host", host = true, rounds = 1, reps = 2, params = { a = { 1, 2, 3, 4 }, b = { 1, 2 } },
  where = function(p) return not (p.a == 4 and p.b == 2), "a = 4 is only tried with b = 1" end,
  build = function(p)
    return { bytes = p.a * 1000, run = function()
      if slow and os.getenv("SLURM_ARRAY_TASK_ID") == slow then os.execute("sleep 120") end
      local x = 0
      for i = 1, p.a * p.b * 1000 do x = x + i % 7 end
      return x
    end, verify = function() return true end }
  end }
