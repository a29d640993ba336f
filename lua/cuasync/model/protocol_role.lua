-- A role's handle, t: each method yields one action to the scheduler (protocol.lua), and resume
-- checks what the role yielded before it becomes the role's pending action, so that a misuse
-- (a barrier of another run, a bad count or parity) is an "error" result naming the role. Pure Lua.
local util = require("cuasync.util")
local mbarrier = require("cuasync.model.mbarrier")
local actions = require("cuasync.model.protocol_actions")
local turns = require("cuasync.model.order_turns")

local M = {}
local fault, Fault = actions.fault, actions.Fault

local Role = {}
Role.__index = Role
local function step(self, action) return coroutine.yield(action) end
function Role:arrive(b, n, phase) return step(self, { op = "arrive", b = b, n = n or 1, phase = phase }) end
function Role:arrive_drop(b, n) return step(self, { op = "arrive_drop", b = b, n = n or 1 }) end
function Role:expect_tx(b, bytes) return step(self, { op = "expect_tx", b = b, bytes = bytes }) end
function Role:complete_tx(b, bytes) return step(self, { op = "complete_tx", b = b, bytes = bytes }) end
function Role:arrive_expect_tx(b, bytes, n) return step(self, { op = "arrive_expect_tx", b = b, bytes = bytes, n = n or 1 }) end
function Role:bulk(bytes, b) return step(self, { op = "bulk", b = b, bytes = bytes }) end
function Role:wait_parity(b, parity, phase) return step(self, { op = "wait_parity", b = b, parity = parity, phase = phase }) end
function Role:wait(b, token) return step(self, { op = "wait", b = b, token = token }) end
function Role:cp_async(bytes, stage, iteration) return step(self, { op = "cp_async", bytes = bytes, stage = stage, iteration = iteration }) end
function Role:commit_group() return step(self, { op = "commit_group" }) end
function Role:wait_group(n) return step(self, { op = "wait_group", n = n }) end
function Role:cp_async_arrive(b, n, noinc) return step(self, { op = "cp_async_arrive", b = b, n = n or 1, noinc = noinc == true }) end
function Role:read(stage, iteration) return step(self, { op = "read", stage = stage, iteration = iteration }) end
-- an ordered barrier's turns (model/order_turns.lua): enter after the wait, leave before passing it on
function Role:turn(seq, group, round, members, groups)
  return step(self, { op = "turn", seq = seq, group = group, round = round, members = members, groups = groups })
end
function Role:turn_end(seq) return step(self, { op = "turn_end", seq = seq }) end
function Role:note(text) self.log[#self.log + 1] = ("step %d: %s"):format(self.run.steps, tostring(text)) end
M.Role = Role

local function bar_check(role, a, what)
  if getmetatable(a.b) ~= mbarrier.Barrier then
    fault("error", role.name, nil, ("%s: %s's barrier argument is not a barrier of this run (got %s)"):format(
          role.name, what, util.describe(a.b)))
  end
  -- one made elsewhere (cuasync.model.mbarrier(n), or another run's) is in no state this run reports
  if not role.run.owned[a.b] then
    fault("error", role.name, nil, ("%s: %s's barrier %s was not made by this run: use t.bar.NAME (the barriers of the spec)"):format(
          role.name, what, a.b.name or "(unnamed)"))
  end
  if a.phase ~= nil and not util.is_integer(a.phase) then
    fault("error", role.name, a.b.name, ("%s: %s's phase must be an integer (got %s)"):format(role.name, what, util.describe(a.phase)))
  end
end

-- Actions that name no barrier (the per-thread copies of model/async_copies.lua).
local BARRIERLESS = { cp_async = true, commit_group = true, wait_group = true, read = true, turn = true, turn_end = true }

function M.resume(run, role, value)
  -- the first resume hands the role its handle; later ones hand back the step's result only
  local ok, action
  if role.started then
    ok, action = coroutine.resume(role.co, value)
  else
    role.started = true
    ok, action = coroutine.resume(role.co, role)
  end
  if not ok then
    if getmetatable(action) == Fault then error(action, 0) end
    fault("error", role.name, nil, ("%s raised: %s"):format(role.name, tostring(action)))
  end
  if coroutine.status(role.co) == "dead" then
    role.done = true
    role.action = nil
    role.log[#role.log + 1] = ("step %d: finished"):format(run.steps)
    return
  end
  if type(action) ~= "table" or not action.op then
    fault("error", role.name, nil, ("%s yielded %s: roles act only through t's methods"):format(role.name, util.describe(action)))
  end
  if BARRIERLESS[action.op] then
    local misuse = (action.op == "turn" or action.op == "turn_end") and turns.misuse(role, action)
    if misuse then fault("error", role.name, nil, misuse) end
    if action.op == "wait_group" and (not util.is_integer(action.n) or action.n < 0) then
      fault("error", role.name, nil, ("%s: wait_group's n must be a non-negative integer (got %s)"):format(role.name, util.describe(action.n)))
    end
    if (action.op == "cp_async" or action.op == "read") and type(action.stage) ~= "string" then
      fault("error", role.name, nil, ("%s: %s needs a stage name (got %s)"):format(role.name, action.op, util.describe(action.stage)))
    end
    role.action = action
    return
  end
  bar_check(role, action, action.op)
  if action.op == "wait" and (getmetatable(action.token) ~= mbarrier.Token or action.token.barrier ~= action.b) then
    fault("error", role.name, action.b.name, ("%s: wait on %s needs a token from that barrier's arrive (got %s)"):format(
          role.name, action.b.name, util.describe(action.token)))
  end
  if (action.op == "arrive" or action.op == "arrive_drop" or action.op == "arrive_expect_tx" or action.op == "cp_async_arrive")
     and (not util.is_integer(action.n) or action.n < 1) then
    fault("error", role.name, nil, ("%s: %s count must be a positive integer (got %s)"):format(role.name, action.op, util.describe(action.n)))
  end
  if action.bytes ~= nil and (not util.is_integer(action.bytes) or action.bytes < 0) then
    fault("error", role.name, nil, ("%s: %s bytes must be a non-negative integer (got %s)"):format(role.name, action.op, util.describe(action.bytes)))
  end
  if action.op == "wait_parity" and action.parity ~= 0 and action.parity ~= 1 then
    fault("error", role.name, nil, ("%s: wait_parity's parity must be 0 or 1 (got %s)"):format(role.name, util.describe(action.parity)))
  end
  role.action = action
end

return M
