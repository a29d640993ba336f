-- The per-thread asynchronous copies (cp.async) of model.run: copies in flight that land in any
-- order, their async-groups (commit_group / wait_group), the arrivals they trigger on an mbarrier
-- (cp.async.mbarrier.arrive[.noinc]) and reads of a stage checked against copies still landing
-- there. protocol.lua's scheduler calls these; a fault is raised through `fault`. Pure Lua.
--   t:cp_async(bytes, stage[, i])       a copy into `stage` (any name: "stage[2]") for iteration i, lands later
--   t:commit_group()                    closes the role's open group
--   t:wait_group(n)                     blocks until at most n of its committed groups are pending
--   t:cp_async_arrive(b[, n[, noinc]])  n arrivals on b once all the role's earlier copies landed
--   t:read(stage[, i])                  reads `stage`: a race if a copy into it is still in flight; with
--                                       i, stale if a role's last copy into it was for another iteration
local M = {}

-- A role's copy state: its open group and its committed groups (each { id, pending = copies }).
local function groups(role)
  role.cp = role.cp or { open = { id = 1, pending = 0 }, committed = {}, next = 2 }
  return role.cp
end

function M.issue(run, role, a)
  local g = groups(role).open
  g.pending = g.pending + 1
  run.inflight[#run.inflight + 1] = { kind = "copy", bytes = a.bytes, stage = a.stage, from = role.name, owner = role,
                                      group = g, id = run.steps, iteration = a.iteration }
  return ("cp.async of %d bytes into %s issued (group %d)"):format(a.bytes, a.stage, g.id)
end

function M.commit(role)
  local c = groups(role)
  c.committed[#c.committed + 1] = c.open
  local id = c.open.id
  c.open = { id = c.next, pending = 0 }
  c.next = c.next + 1
  return ("commit_group: group %d closed"):format(id)
end

-- Committed groups with copies still in flight.
local function pending_groups(role)
  local n = 0
  for _, g in ipairs(groups(role).committed) do if g.pending > 0 then n = n + 1 end end
  return n
end

-- PTX cp.async.wait_group n: every committed group but the n most recent has completed (the
-- recent ones may be complete or not; an older one still pending holds the wait).
function M.wait_enabled(role, a)
  local c = groups(role).committed
  for i = 1, #c - a.n do
    if c[i].pending > 0 then return false end
  end
  return true
end

function M.wait_done(role, a)
  return ("wait_group %d passed (%d group%s still in flight)"):format(a.n, pending_groups(role),
    pending_groups(role) == 1 and "" or "s")
end

-- The arrival waits for every copy the role issued before it.
function M.arrive_later(run, role, a)
  local after = {}
  for _, f in ipairs(run.inflight) do
    if f.kind == "copy" and f.owner == role then after[#after + 1] = f end
  end
  local arrival = a.b:cp_async_arrive(a.noinc, a.n)
  run.inflight[#run.inflight + 1] = { kind = "arrival", arrival = arrival, b = a.b, n = a.n, from = role.name,
                                      owner = role, after = after, id = run.steps }
  return ("cp.async.mbarrier.arrive%s (%d) on %s issued, after %d cop%s in flight"):format(a.noinc and ".noinc" or "",
    a.n, a.b.name, #after, #after == 1 and "y" or "ies")
end

-- Is an in-flight item free to land now? (An arrival only after the copies before it.)
function M.can_land(run, f)
  if f.kind ~= "arrival" then return true end
  for _, c in ipairs(f.after) do
    for _, g in ipairs(run.inflight) do if g == c then return false end end
  end
  return true
end

-- A copy or an arrival lands. Returns the text for its owner's timeline.
function M.land(run, f, check_arrivals)
  if f.kind == "copy" then
    f.group.pending = f.group.pending - 1
    run.filled = run.filled or {}
    run.filled[f.stage] = run.filled[f.stage] or {}
    run.filled[f.stage][f.from] = f.iteration
    return ("its cp.async of %d bytes into %s landed"):format(f.bytes, f.stage)
  end
  local b = f.b
  local before = b:state()
  check_arrivals("the cp.async arrival of " .. f.from, b, "cp.async.mbarrier.arrive", f.n)
  f.arrival:land()
  return ("its cp.async arrival landed on %s: %s -> %s%s"):format(b.name, before, b:state(),
    b.completed and " (phase completed)" or "")
end

-- A read of `stage`: a race when a copy into it is still in flight.
function M.read(run, role, a, fault)
  for _, f in ipairs(run.inflight) do
    if f.kind == "copy" and f.stage == a.stage then
      fault("race", role.name, a.stage, ("%s reads %s while a cp.async of %s into it (group %d) is still in flight: the read does not wait for that copy's group (a wait_group too shallow, or a read before the wait)"):format(
            role.name, a.stage, f.from, f.group.id))
    end
  end
  if a.iteration ~= nil then
    local names = {}
    for from in pairs((run.filled or {})[a.stage] or {}) do names[#names + 1] = from end
    table.sort(names)
    for _, from in ipairs(names) do
      local i = run.filled[a.stage][from]
      if i ~= nil and i ~= a.iteration then
        fault("stale", role.name, a.stage, ("%s reads %s for iteration %d, but the last copy %s made into it was for iteration %d: the stage was not refilled (a producer that left early, or a skipped copy)"):format(
              role.name, a.stage, a.iteration, from, i))
      end
    end
  end
  return ("read %s"):format(a.stage)
end

return M
