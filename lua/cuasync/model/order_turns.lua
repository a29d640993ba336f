-- model.run's turns: the check that consumer groups ordered by a barrier really take turns. A
-- role enters a turn (t:turn(seq, group, round, members, groups)) once its wait for it passed
-- and leaves it (t:turn_end(seq)) before it passes the turn on. A sequence's turns go group 0,
-- 1, ..., groups - 1, 0, ... (round by round); a turn is over when all `members` roles of its
-- group left it. A group entering while another group is still in its turn, out of its order,
-- or a round early is an "order" fault naming the sequence, both groups and the rounds. Pure Lua.
local util = require("cuasync.util")

local M = {}

local function state(run, seq)
  run.turns = run.turns or {}
  local s = run.turns[seq]
  if not s then
    s = { done = 0, owner = nil, round = nil, entered = 0, left = 0 }
    run.turns[seq] = s
  end
  return s
end

-- Is the action well formed? (A message, or nil.)
function M.misuse(role, a)
  if type(a.seq) ~= "string" then return ("%s: %s needs a sequence name (got %s)"):format(role.name, a.op, util.describe(a.seq)) end
  if a.op == "turn_end" then return nil end
  for _, k in ipairs({ "group", "round", "members", "groups" }) do
    if not util.is_integer(a[k]) or a[k] < 0 then
      return ("%s: turn's %s must be a non-negative integer (got %s)"):format(role.name, k, util.describe(a[k]))
    end
  end
end

-- Enter: raises the "order" fault (through fault) or returns the timeline's text.
function M.enter(run, role, a, fault)
  local s = state(run, a.seq)
  local who = ("group %d (round %d)"):format(a.group, a.round)
  if s.owner ~= nil and s.owner ~= a.group then
    fault("order", role.name, nil, ("%s: %s entered its turn at %s while group %d (round %d) is still in its own there (%d of its %d roles left): two groups in one turn, the ordered barrier let the next group in early"):format(
      role.name, who, a.seq, s.owner, s.round, s.left, s.members))
  end
  if s.owner == a.group and s.round ~= a.round then
    fault("order", role.name, nil, ("%s: %s entered its turn at %s while its own round %d turn is not over (%d of %d roles left)"):format(
      role.name, who, a.seq, s.round, s.left, s.members))
  end
  if s.owner == nil then
    local g, k = s.done % a.groups, math.floor(s.done / a.groups)
    if a.group ~= g or a.round ~= k then
      fault("order", role.name, nil, ("%s: %s entered its turn at %s out of order: %d turns were taken there, so group %d's round %d comes next"):format(
        role.name, who, a.seq, s.done, g, k))
    end
    s.owner, s.round, s.members, s.entered, s.left = a.group, a.round, a.members, 0, 0
  end
  s.entered = s.entered + 1
  if s.entered > s.members then
    fault("order", role.name, nil, ("%s: %s entered its turn at %s %d times; the group has %d roles"):format(
      role.name, who, a.seq, s.entered, s.members))
  end
  return ("entered its turn at %s: %s (%d of %d roles in)"):format(a.seq, who, s.entered, s.members)
end

function M.leave(run, role, a)
  local s = state(run, a.seq)
  s.left = s.left + 1
  local text = ("left its turn at %s (group %d, round %d; %d of %d roles left)"):format(a.seq, s.owner or -1, s.round or -1,
    s.left, s.members or 0)
  if s.left == s.members and s.entered == s.members then
    s.done, s.owner, s.round = s.done + 1, nil, nil
  end
  return text
end

return M
