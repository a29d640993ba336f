-- A plan's ordered barrier: its consumer groups take turns (ping-pong warpgroups, CUTLASS's
-- OrderedSequenceBarrier). The consumer warps split into `groups` groups of whole warpgroups;
-- a group's round goes through `depth` turns (e.g. 0 the mainloop, 1 the epilogue); group g
-- enters its turn at stage d only after group g - 1 left its turn there, and group 0 only after
-- the last group left its previous round's. Pure Lua: the field's check, the derivation (counts,
-- offsets, phases), its layout, explain and Config lines, and the names the CPU model and the
-- watchdog both give its barriers.
--   order = { name = "math", groups = 2, depth = 2, arrive = "warp" | "thread",
--             consume = "alternate" | "all" }
-- Barrier [d][g] (8 bytes at order_offset + 8 (d groups + g)): group g waits on it for its turn
-- at stage d; group g - 1 (mod groups) arrives on it when it passes that turn. Its count is one
-- group's arrivals: one lane per warp (arrive = "warp", after __syncwarp) or every thread. Group
-- 0's first wait is for the phase before phase 0 (parity 1: a fresh barrier passes it), the
-- others' for phase 0; each flips its parity when its stage index wraps past depth - 1. So group
-- g's round k waits at stage d for phase k of [d][g] (group 0: phase k - 1).
-- consume = "alternate": a pipeline stage is read by one group, the one whose tile it is (tiles
-- alternate between the groups), so empty[s] counts one group's releases, not every consumer's.
local util = require("cuasync.util")

local M = {}
M.FIELDS = { name = true, groups = true, depth = true, arrive = true, consume = true }
M.MAX_GROUPS, M.MAX_DEPTH = 16, 16
-- the watchdog record's role of a wait for a turn (1 producer, 2 consumer): the Config's
-- order_role, which order.cuh's waits record (one number, here)
M.ROLE = 3
-- the Config members the order adds (pipeline_header.lua keeps load names off them)
M.MEMBERS = { "order_groups", "order_depth", "order_offset", "order_count", "order_arrive", "order_group_warps",
              "order_alternate", "order_progress", "order_role" }
M.KEY = "order"   -- the CPU model's barrier array (order[d * groups + g]; b1_order in a cluster)

local function fail(msg) util.fail("pipeline", msg) end

-- spec.order checked against the plan's roles; nil when not given.
function M.check(o, roles, cp)
  if o == nil then return nil end
  if type(o) ~= "table" then
    fail(("order must be a table { groups = n, depth = d, name = s } (got %s)"):format(util.describe(o)))
  end
  util.known_fields("pipeline", o, M.FIELDS, "order")
  local name = o.name == nil and "order" or o.name
  if type(name) ~= "string" or not name:match("^[%a_][%w_]*$") or #name > 32 then
    fail(("order.name must be an identifier of at most 32 characters (it names the ordered barrier in a hang; got %s)"):format(
      util.describe(name)))
  end
  if not util.is_integer(o.groups) then
    fail(("order.groups must be an integer, the consumer groups that take turns (got %s)"):format(util.describe(o.groups)))
  end
  if o.groups < 2 then
    fail(("order.groups = %d: an ordered barrier needs at least 2 groups to take turns"):format(o.groups))
  end
  util.int_in("pipeline", "order.groups", o.groups, 2, M.MAX_GROUPS)
  local depth = o.depth == nil and 1 or o.depth
  if not util.is_integer(depth) or depth < 1 then
    fail(("order.depth must be a positive integer, the turns of a group's round (got %s)"):format(util.describe(depth)))
  end
  util.int_in("pipeline", "order.depth", depth, 1, M.MAX_DEPTH)
  local arrive = o.arrive == nil and "warp" or o.arrive
  if arrive ~= "warp" and arrive ~= "thread" then
    fail(('order.arrive must be "warp" (one lane of each warp passes the turn) or "thread" (every thread does) (got %s)'):format(
      util.describe(arrive)))
  end
  local consume = o.consume == nil and "alternate" or o.consume
  if consume ~= "alternate" and consume ~= "all" then
    fail(('order.consume must be "alternate" (each stage is read by the group whose turn it is) or "all" (every group reads every stage) (got %s)'):format(
      util.describe(consume)))
  end
  if cp then fail("order is for TMA/bulk plans; a cp.async plan's consumers do not take turns") end
  if roles.unified then
    fail('order needs producer warps (producer = { warps = n }): with producer = "all" thread 0 fills every stage while its group waits for its turn')
  end
  if roles.producer_warps % 4 ~= 0 then
    fail(("order needs producer warps in whole warpgroups (producer = { warps = n }, a multiple of 4; got %d), so that each group's warpgroups are hardware warpgroups (wgmma, setmaxnreg and warpgroup syncs act on warps 4w..4w+3)"):format(
      roles.producer_warps))
  end
  if roles.consumer_threads % 128 ~= 0 then
    fail(("order needs consumer warps in whole warpgroups (a multiple of 4 warps: a group is one or more warpgroups; got %d consumer threads)"):format(
      roles.consumer_threads))
  end
  local wgs = roles.consumer_warps / 4
  if o.groups > wgs then
    fail(("order.groups = %d needs %d consumer warpgroups; consumer = { warps = %d } holds %d"):format(o.groups, o.groups,
      roles.consumer_warps, wgs))
  end
  if wgs % o.groups ~= 0 then
    fail(("order.groups = %d must divide the %d consumer warpgroups evenly (every group the same size)"):format(o.groups, wgs))
  end
  local gw = roles.consumer_warps / o.groups
  return { name = name, groups = o.groups, depth = depth, arrive = arrive, consume = consume, group_warps = gw,
           group_threads = 32 * gw, count = arrive == "warp" and gw or 32 * gw, barriers = depth * o.groups }
end

-- Place the order's barriers at the plan's barrier_end (after empty[]); plan.order is set.
function M.place(plan, o)
  o.offset = plan.barrier_end
  o.bytes = 8 * o.barriers
  plan.barrier_end = plan.barrier_end + o.bytes
  plan.order = o
end

-- The releases a stage's empty barrier expects from one block: one group's with "alternate".
function M.arrivals(plan, roles)
  local o = plan.order
  if o and o.consume == "alternate" then return roles.arrivals / o.groups end
  return roles.arrivals
end

-- The watchdog's progress words: the arrivals each ordered barrier received.
function M.progress(plan)
  local o = plan.order
  if not o then return end
  plan.progress.order = plan.progress.words
  plan.progress.words = plan.progress.words + o.barriers
end

-- A group's pipeline state with consume = "alternate" (ordered<>::first and skip_others): it
-- starts past the `n` iterations of each group before it (group g's first tile is tile g), and
-- after each of its tiles moves past the other groups' (the next is G tiles on). With "all",
-- every group reads every stage: nothing is skipped.
function M.first(o, g, n) return o.consume == "alternate" and g * n or 0 end
function M.skip(o, n) return o.consume == "alternate" and (o.groups - 1) * n or 0 end

function M.name(o, d, g) return ("%s[%d][%d]"):format(o.name, d, g) end
function M.index(o, d, g) return d * o.groups + g end
function M.split(o, i) return math.floor(i / o.groups), i % o.groups end

-- Group g's round k at stage d waits for this phase of [d][g] (-1: the fresh barrier's).
function M.phase(g, k) return g == 0 and k - 1 or k end
function M.parity(g, k) return M.phase(g, k) % 2 end
-- The round a wait for `phase` of [d][g] belongs to.
function M.round(g, phase) return g == 0 and phase + 1 or phase end

-- "math[0][1] of ordered barrier 'math' (stage 0, group 1, round 3, phase 3, parity 1)"
function M.place_name(p)
  local at = {}
  if p.rank then at[#at + 1] = ("cluster rank %d"):format(p.rank) end
  at[#at + 1] = ("stage %d"):format(p.stage)
  at[#at + 1] = ("group %d"):format(p.group)
  if p.round then at[#at + 1] = ("round %d"):format(p.round) end
  if p.phase then at[#at + 1] = ("phase %d"):format(p.phase) end
  if p.parity then at[#at + 1] = ("parity %d"):format(p.parity) end
  return ("%s of ordered barrier '%s' (%s)"):format(M.name(p.order, p.stage, p.group), p.order.name, table.concat(at, ", "))
end

-- The barrier at offset `off` from the plan's base: stage d, group g, or nil.
function M.of_offset(plan, off)
  local o = plan and plan.order
  if not o or off < o.offset or off >= o.offset + o.bytes or (off - o.offset) % 8 ~= 0 then return nil end
  return M.split(o, (off - o.offset) / 8)
end

-- The watchdog's record of a wait for a turn (role 3: st.iteration = round x depth + stage), as
-- hang.lua names it: { name, stage, group, round, phase, at }, or nil if `off` (from the plan's
-- base) is none of the order's barriers.
function M.hang_place(plan, off, r, rank)
  local d, g = M.of_offset(plan, off)
  if not d then return nil end
  local o = plan.order
  local round = math.floor(r.iteration / o.depth)
  local phase = M.phase(g, round)
  return { name = M.name(o, d, g), stage = d, group = g, round = round, phase = phase,
           at = M.place_name{ order = o, stage = d, group = g, round = round, phase = phase, parity = r.parity, rank = rank } }
end

-- What the progress word of [d][g] says (e: the Hang's fields), or nil.
function M.hang_progress(plan, e)
  local o = plan.order
  if not e.received or not e.phase or e.phase < 0 then return nil end
  local got = e.received - e.phase * o.count
  local before = (e.group - 1) % o.groups
  return { phase = e.phase, got = got, need = o.count, before = before,
           text = ("%s has received %d of the %d arrivals of phase %d (group %d passing its round %d turn at stage %d)"):format(
             e.barrier, math.max(0, got), o.count, e.phase, before, e.phase, e.stage) }
end

-- The likely causes of a hung wait for a turn, appended to `causes`.
function M.hang_causes(plan, e, p, causes)
  local o = plan.order
  local want = e.phase % 2
  if e.parity and e.parity ~= want then
    causes[#causes + 1] = ("a parity off by one: group %d's round %d waits at stage %d for parity %d (%s), but this wait asked for parity %d"):format(
      e.group, e.round, e.stage, want, e.group == 0 and "group 0 starts on parity 1" or "groups after 0 start on parity 0", e.parity)
  end
  if p and p.got < p.need then
    causes[#causes + 1] = ("a pass missing: group %d's round %d turn at stage %d brought %d of the %d arrivals (a group that skips pass_turn or leaves its loop early, is itself blocked, or has warps the order does not count: order_count is %d)"):format(
      p.before, p.phase, e.stage, math.max(0, p.got), p.need, o.count)
  end
end

function M.layout(plan, out)
  local o = plan.order
  if not o then return end
  for i = 0, o.barriers - 1 do
    local d, g = M.split(o, i)
    out[#out + 1] = { name = M.name(o, d, g), offset = o.offset + 8 * i, bytes = 8, align = 8 }
  end
end

function M.explain(plan, out)
  local o = plan.order
  if not o then return end
  out[#out + 1] = ("  order '%s': %d groups of %d consumer warps (%s each) take turns through %d stage%s; %s[0..%d][0..%d] at %d, %d arrivals each (%s); group g waits on [d][g], group g - 1 passes it (group 0 after group %d's previous round: its first turn passes on the fresh barrier, parity 1)%s"):format(
    o.name, o.groups, o.group_warps, o.group_warps == 4 and "a warpgroup" or ("%d warpgroups"):format(o.group_warps / 4),
    o.depth, o.depth == 1 and "" or "s", o.name, o.depth - 1, o.groups - 1, o.offset, o.count,
    o.arrive == "warp" and "one lane of each warp of the group passing" or "every thread of the group passing", o.groups - 1,
    o.consume == "alternate" and ("; consume = \"alternate\": a stage is read by the group whose tile it is, so empty counts one group's releases (%d)"):format(
      plan.empty_count) or "")
end

-- The Config's members (pipeline_header.lua appends them; none for a plan without an order).
function M.header(plan, lines)
  local o = plan.order
  if not o then return end
  lines[#lines + 1] = ("    // order '%s': groups take turns; [d][g] at order_offset + 8 (d order_groups + g)"):format(o.name)
  lines[#lines + 1] = ("    static constexpr unsigned order_groups = %du, order_depth = %du;"):format(o.groups, o.depth)
  lines[#lines + 1] = ("    static constexpr unsigned order_offset = %du, order_count = %du;"):format(o.offset, o.count)
  lines[#lines + 1] = ("    static constexpr int order_arrive = %d;          // %s: 0 thread, 1 warp"):format(
    o.arrive == "warp" and 1 or 0, o.arrive)
  lines[#lines + 1] = ("    static constexpr unsigned order_group_warps = %du;"):format(o.group_warps)
  lines[#lines + 1] = ("    static constexpr bool order_alternate = %s;    // a stage is read by one group"):format(
    o.consume == "alternate" and "true" or "false")
  lines[#lines + 1] = ("    static constexpr unsigned order_progress = %du;  // watchdog words: arrivals each [d][g] received"):format(
    plan.progress.order)
  lines[#lines + 1] = ("    static constexpr unsigned order_role = %du;      // the watchdog's role of a wait for a turn"):format(M.ROLE)
end

return M
