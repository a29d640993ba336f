-- The one way a plan's barrier is named, by the CPU model (P:simulate's result and report) and by
-- the watchdog's hang message alike: the same fault, found by the model or recorded on the
-- device, names the same barrier in the same words. Pure Lua.
--   M.name("full", 2)          -> "full[2]"                 (the barrier, as both print it)
--   M.key("full", 1)           -> "b1_full"                 (the model's array of cluster block 1; "full" for a lone block)
--   M.parse("b1_full[2]")      -> "full", 2, 1              (which, stage, cluster block or nil; a
--                                 stage buffer's "stage[1]" parses too: "stage", 1)
--   M.phase(which, i, stages)  -> the phase of its barrier iteration i waits for
--   M.iteration(which, s, phase, stages) -> the iteration whose wait that is
--   M.place{ pipeline, which, stage, phase, parity, iteration, rank }
--     -> "full[2] of pipeline 'main' (stage 2, phase 0, parity 0, iteration 2)"
local M = {}

M.WHICH = { full = true, empty = true }

function M.name(which, stage) return ("%s[%d]"):format(which, stage) end

function M.key(which, block) return block and ("b%d_%s"):format(block, which) or which end

function M.parse(name)
  if type(name) ~= "string" then return nil end
  local b, which, s = name:match("^b(%d+)_(%a+)%[(%d+)%]$")
  if not b then which, s = name:match("^(%a+)%[(%d+)%]$") end
  if not which then return nil end
  return which, tonumber(s), b and tonumber(b) or nil
end

-- A ring of `stages`: iteration i uses stage i % stages in pass floor(i / stages). The consumer's
-- wait on full[s] is for the pass's own phase; the producer's wait on empty[s] is for the release
-- of iteration i - stages, the phase before (-1: a fresh barrier, which the wait passes at once).
function M.phase(which, iteration, stages)
  local pass = math.floor(iteration / stages)
  return which == "empty" and pass - 1 or pass
end

function M.iteration(which, stage, phase, stages)
  return (which == "empty" and phase + 1 or phase) * stages + stage
end

-- The barrier in its pipeline: p = { pipeline, which, stage, phase, parity, iteration, rank (a
-- cluster's block rank, or nil) }; the parts not known are left out.
function M.place(p)
  local name = M.name(p.which, p.stage)
  local at = {}
  if p.rank then at[#at + 1] = ("cluster rank %d"):format(p.rank) end
  at[#at + 1] = ("stage %d"):format(p.stage)
  if p.phase then at[#at + 1] = ("phase %d"):format(p.phase) end
  if p.parity then at[#at + 1] = ("parity %d"):format(p.parity) end
  if p.iteration then at[#at + 1] = ("iteration %d"):format(p.iteration) end
  return ("%s of pipeline '%s' (%s)"):format(name, p.pipeline, table.concat(at, ", "))
end

return M
