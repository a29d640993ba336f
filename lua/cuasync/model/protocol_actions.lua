-- What a role's step does to the run (protocol.lua's scheduler performs it once it is enabled):
-- the mbarrier operation, the copy it issues, the wait it passes, and the faults each can find
-- (tx-count overflow, over-arrival, parity aliasing). A fault is raised as a Fault table, which
-- the scheduler turns into the result. Pure Lua.
local mbarrier = require("cuasync.model.mbarrier")
local copies = require("cuasync.model.async_copies")
local turns = require("cuasync.model.order_turns")

local M = {}

-- A fault found during a run: raised through the scheduler as a table, turned into the result.
local Fault = {}
local function fault(kind, role, barrier, msg, wait)
  -- wait: the blocked wait of a deadlock ({ phase, parity }), which a plan's simulate places
  local f = { kind = kind, role = role, barrier = barrier, message = msg }
  if wait then f.phase, f.parity = wait.phase, wait.parity end
  error(setmetatable(f, Fault), 0)
end
M.Fault, M.fault = Fault, fault

-- Is the role's pending action enabled now? (Only waits can be disabled.)
local function enabled(role, a)
  if a.op == "wait_parity" then return a.b.phase % 2 ~= a.parity end
  if a.op == "wait_group" then return copies.wait_enabled(role, a) end
  if a.op == "wait" then return (a.b:test_wait(a.token)) end
  return true
end

-- The phase a wait means: given, or the role's next one on that barrier.
local function intended(role, a)
  if a.phase then return a.phase end
  local last = role.seen[a.b]
  if last == nil then return a.parity == 1 and -1 or 0 end
  return last + 1
end

local function check_tx(role, b, what, delta)
  local tx = b.tx + delta
  if tx > mbarrier.MAX_TX or tx < -mbarrier.MAX_TX then
    fault("tx_overflow", role, b.name, ("%s: %s on %s takes tx-count to %d, outside -(2^20-1)..2^20-1 (%s)"):format(
          role, what, b.name, tx, b:state()))
  end
end

local function check_arrivals(role, b, what, n)
  if n > b.pending then
    fault("over_arrival", role, b.name, ("%s: %s on %s brings %d arrival%s with %d pending (%s): more arrivals than pending is undefined in PTX"):format(
          role, what, b.name, n, n == 1 and "" or "s", b.pending, b:state()))
  end
end

-- Perform a role's action (it is enabled). Returns the value handed back to the role.
local function perform(run, role, a)
  if a.op == "cp_async" then return nil, copies.issue(run, role, a) end
  if a.op == "commit_group" then return nil, copies.commit(role) end
  if a.op == "wait_group" then return nil, copies.wait_done(role, a) end
  if a.op == "read" then return nil, copies.read(run, role, a, fault) end
  if a.op == "turn" then return nil, turns.enter(run, role, a, fault) end
  if a.op == "turn_end" then return nil, turns.leave(run, role, a) end
  local b = a.b
  local before = b:state()
  local name = role.name
  local ret, text
  if a.op == "cp_async_arrive" then
    if not a.noinc and b.pending + a.n > mbarrier.MAX_COUNT then
      fault("over_arrival", name, b.name, ("%s: cp.async.mbarrier.arrive raises %s's pending count past 2^20-1 (%s)"):format(name, b.name, b:state()))
    end
    return nil, copies.arrive_later(run, role, a)
  elseif a.op == "arrive" or a.op == "arrive_drop" then
    check_arrivals(name, b, a.op, a.n)
    if a.phase and a.phase ~= b.phase then
      fault("over_arrival", name, b.name, ("%s: arrives on %s for phase %d but the barrier is at phase %d (%s): %s"):format(
            name, b.name, a.phase, b.phase, b:state(), a.phase < b.phase
              and ("phase %d completed without this arrival: the barrier gets more arrivals per phase than its count %d"):format(a.phase, b.expected)
              or "an arrival for a phase that has not begun"))
    end
    ret = b[a.op](b, a.n)
    text = ("%s%s %s"):format(a.op, a.n ~= 1 and ("(" .. a.n .. ")") or "", b.name)
  elseif a.op == "arrive_expect_tx" then
    check_arrivals(name, b, a.op, a.n)
    check_tx(name, b, ("arrive_expect_tx(%d)"):format(a.bytes), a.bytes)
    ret = b:arrive_expect_tx(a.bytes, a.n)
    text = ("arrive_expect_tx(%d) %s"):format(a.bytes, b.name)
  elseif a.op == "expect_tx" or a.op == "complete_tx" then
    check_tx(name, b, ("%s(%d)"):format(a.op, a.bytes), a.op == "expect_tx" and a.bytes or -a.bytes)
    b[a.op](b, a.bytes)
    text = ("%s(%d) %s"):format(a.op, a.bytes, b.name)
  elseif a.op == "bulk" then
    local parts = run.spec.pieces
    local left = a.bytes
    for p = parts, 1, -1 do
      local piece = p == 1 and left or math.floor(left / p / 16) * 16
      if piece > 0 then
        run.inflight[#run.inflight + 1] = { bytes = piece, b = b, from = name, id = run.steps, phase = b.phase }
        left = left - piece
      end
    end
    return nil, ("bulk copy of %d bytes issued on %s"):format(a.bytes, b.name)
  elseif a.op == "wait_parity" then
    local want = intended(role, a)
    local q = b.phase - 1
    if q ~= want then
      fault("parity_aliasing", name, b.name, ("%s: wait on %s for parity %d passed at phase %d, %s, but it meant phase %d (%s)"):format(
            name, b.name, a.parity, b.phase, q < 0 and "on the fresh barrier's phase before 0" or ("completing phase " .. q), want, q < want
              and "the phase it means has not completed: the parity names an older one"
              or "the barrier moved two or more phases past it: the parity names a later one"))
    end
    role.seen[b] = q
    return nil, q < 0 and ("wait %s parity %d passed (a fresh barrier: the phase before phase 0)"):format(b.name, a.parity)
      or ("wait %s parity %d passed (phase %d completed)"):format(b.name, a.parity, q)
  elseif a.op == "wait" then
    local done, aliased = b:test_wait(a.token)
    if aliased then
      fault("parity_aliasing", name, b.name, ("%s: its token of %s is from phase %d but the barrier is at phase %d: overtaken by two phases, test_wait reads the parity only"):format(
            name, b.name, a.token.phase, b.phase))
    end
    role.seen[b] = a.token.phase
    return nil, ("wait %s token of phase %d passed"):format(b.name, a.token.phase)
  else
    fault("error", name, nil, ("%s: unknown action %s"):format(name, tostring(a.op)))
  end
  return ret, ("%s: %s -> %s%s"):format(text, before, b:state(), b.completed and " (phase completed)" or "")
end

-- A waiter whose phase completed and was then overtaken (the barrier moved on by two phases).
local function overtaken(role)
  local a = role.action
  if a.op ~= "wait_parity" then return end
  local want = intended(role, a)
  if a.b.phase >= want + 2 then
    fault("parity_aliasing", role.name, a.b.name, ("%s: waits on %s for parity %d meaning phase %d, but the barrier is already at phase %d: overtaken by two phases, the parity no longer names phase %d"):format(
          role.name, a.b.name, a.parity, want, a.b.phase, want))
  end
end

local function describe_wait(a)
  if a.op == "wait_group" then return ("waits for its cp.async groups (wait_group %d)"):format(a.n) end
  if a.op == "wait_parity" then
    return ("waits on %s for parity %d (%s)"):format(a.b.name, a.parity, a.b:state())
  end
  return ("waits on %s for its token of phase %d (%s)"):format(a.b.name, a.token.phase, a.b:state())
end

M.enabled, M.check_tx, M.check_arrivals, M.perform = enabled, check_tx, check_arrivals, perform
M.overtaken, M.describe_wait = overtaken, describe_wait
return M
