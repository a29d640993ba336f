-- The protocol of a plan's ordered barrier (model/order_plan.lua), as model.run roles: the
-- consumer groups of pipeline_protocol.lua's spec taking turns, with the plan's counts (and a
-- mutation's faults). Pure Lua.
--   each role of group g (a warp, or a warpgroup with release = "warpgroup"; one per warp of
--   per-thread arrivals): for each round k (its tiles: g, g + groups, ... with consume =
--   "alternate", every tile with "all"), for each stage d: wait [d][g] for phase k (group 0:
--   k - 1), enter its turn, (d = 0, "alternate": consume the tile's pipeline iterations), leave,
--   arrive on [d][g + 1] for phase k. With consume = "all" the tile's iterations are consumed
--   before the round's turns. A group walks its pipeline state as ordered<>'s does: it starts
--   past the groups before it (order_plan.first) and, after each tile, moves past the others'
--   (order_plan.skip): the iterations it consumes follow from that walk, not from the tile.
-- A tile is `tile_iterations` pipeline iterations (P:simulate's option, default 2).
local util = require("cuasync.util")
local orders = require("cuasync.model.order_plan")

local M = {}

M.MUTATIONS = { skip_pass = true, order_count = true, turn_parity_flip = true, no_skip = true }
M.TILE = 2
local KEY_PATTERN = orders.KEY   -- "order": letters only, a plain Lua pattern

-- P:mutate's order faults, checked (m has been checked for unknown fields).
function M.check_mutation(plan, m)
  local o = plan.order
  for k in pairs(M.MUTATIONS) do
    if m[k] ~= nil and not o then
      util.fail("pipeline.mutate", ("%s is a fault of plans with an order; pipeline '%s' has none"):format(k, plan.name))
    end
  end
  if not o then return end
  if m.consumer_arrivals ~= nil then
    util.fail("pipeline.mutate", ("consumer_arrivals is not modelled for pipeline '%s', which has an order (its groups release their own stages): plant order_count instead"):format(plan.name))
  end
  if m.skip_pass ~= nil then util.int_in("pipeline.mutate", "skip_pass (a group)", m.skip_pass, 0, o.groups - 1) end
  if m.turn_parity_flip ~= nil then util.int_in("pipeline.mutate", "turn_parity_flip (a group)", m.turn_parity_flip, 0, o.groups - 1) end
  if m.no_skip ~= nil then
    if o.consume ~= "alternate" then
      util.fail("pipeline.mutate", ('no_skip is a fault of orders with consume = "alternate" (pipeline \'%s\' has consume = "%s": no group skips an iteration)'):format(
        plan.name, o.consume))
    end
    util.int_in("pipeline.mutate", "no_skip (a group)", m.no_skip, 0, o.groups - 1)
  end
  if m.order_count ~= nil then
    util.int_in("pipeline.mutate", "order_count", m.order_count, 1, 2 ^ 20 - 1)
    if m.order_count == o.count then
      util.fail("pipeline.mutate", ("order_count = %d is the plan's own count"):format(m.order_count))
    end
  end
end

-- simulate's tile_iterations: nil without an order (refused if given), else 1..iterations.
function M.tile(plan, v)
  if v == nil then return plan.order and M.TILE or nil end
  if not plan.order then
    util.fail("pipeline.simulate", ("tile_iterations is for plans with an order; pipeline '%s' has none"):format(plan.name))
  end
  return util.int_in("pipeline.simulate", "tile_iterations", v, 1, 2 ^ 20)
end

-- The order's barriers for block key `key` ("" or "bN_") into `barriers`.
function M.barriers(plan, barriers, key, m)
  local o = plan.order
  barriers[key .. orders.KEY] = { count = m.order_count or o.count, n = o.barriers }
end

-- The consumer roles of block r, in groups taking turns, into `roles`. consume(t, r, i, k) is
-- pipeline_protocol's: wait full for iteration i, release with k arrivals.
function M.consumers(plan, roles, key, r, iterations, tile, consume, m)
  local o, rel = plan.order, plan.roles.release
  local G = o.groups
  local warps_per_role = rel == "warpgroup" and 4 or 1
  local members = o.group_warps / warps_per_role
  local k_release = rel == "thread" and 32 or 1                      -- pipeline arrivals per role
  local k_pass = (o.arrive == "warp" and 1 or 32) * warps_per_role    -- order arrivals per role
  local tiles = math.ceil(iterations / tile)
  local bkey = key .. orders.KEY
  for g = 0, G - 1 do
    roles[("%sg%d_consumer"):format(key, g)] = { function(t)
      local bars = t.bar[bkey]
      local first, step = g, G
      if o.consume == "all" then first, step = 0, 1 end
      local i = orders.first(o, g, tile)   -- the group's pipeline state (its iteration)
      local function iterations_of()       -- a tile's: then past the other groups' (skip_others)
        for _ = 1, tile do
          if i < iterations then consume(t, r, i, k_release) end
          i = i + 1
        end
        if m.no_skip ~= g then i = i + orders.skip(o, tile) end
      end
      local k = 0
      for tl = first, tiles - 1, step do
        if o.consume == "all" then iterations_of() end
        for d = 0, o.depth - 1 do
          local phase = orders.phase(g, k)
          local parity = phase % 2
          if m.turn_parity_flip == g then parity = 1 - parity end
          t:wait_parity(bars[orders.index(o, d, g)], parity, phase)
          local seq = ("%s%s[%d]"):format(key, o.name, d)
          t:turn(seq, g, k, members, G)
          if d == 0 and o.consume == "alternate" then iterations_of() end
          t:turn_end(seq)
          if not (m.skip_pass == g and k == 0 and d == 0) then
            t:arrive(bars[orders.index(o, d, (g + 1) % G)], k_pass, k)
          end
        end
        k = k + 1
      end
    end, n = members }
  end
end

-- A deadlock's longest-blocked wait for a turn (the one the watchdog's post-mortem names: the
-- wait that began earliest), read from the timelines: { i, rank, phase, parity } or nil.
local function longest_wait(r, o)
  local best
  for _, role in ipairs(r.order or {}) do
    local log = r.timeline[role]
    local g = tonumber(role:match("g(%d+)_consumer"))
    local last = log and log[#log] or ""
    local b, i, parity = last:match("blocked: waits on (b?%d*_?)" .. KEY_PATTERN .. "%[(%d+)%] for parity (%d)")
    if g and i then
      local since = #log >= 2 and tonumber(log[#log - 1]:match("^step (%d+)")) or 0   -- 0: waiting since it started
      local d = orders.split(o, tonumber(i))
      local rounds = 0   -- the turns this role took at stage d before
      for _, line in ipairs(log) do
        if line:find(("entered its turn at %s%s[%d]"):format(b, o.name, d), 1, true) then rounds = rounds + 1 end
      end
      if since and (not best or since < best.since) then
        best = { since = since, i = tonumber(i), rank = tonumber(b:match("^b(%d+)_")), parity = tonumber(parity),
                 phase = orders.phase(g, rounds) }
      end
    end
  end
  return best
end

-- P:simulate's result, for a plan with an order: a fault on one of its barriers ("order[i]",
-- "b1_order[i]") placed in the words the watchdog's hang message uses (order_plan.place_name),
-- with the pass it waits for (a deadlock: its longest-blocked wait for a turn, as the watchdog
-- names the earliest); an "order" fault names the order (r.order_name).
function M.result(r, plan, which, i, rank)
  local o = plan.order
  if r.kind == "order" then r.order_name = o.name end
  if r.kind == "deadlock" then
    local w = longest_wait(r, o)
    if w then which, i, rank, r.phase, r.parity = orders.KEY, w.i, w.rank, w.phase, w.parity end
  end
  if which ~= orders.KEY then return end
  local d, g = orders.split(o, i)
  r.order_name, r.stage, r.group, r.which, r.block = o.name, d, g, "order", rank or 0
  r.barrier_name = orders.name(o, d, g)
  if r.phase then r.round = orders.round(g, r.phase) end
  r.at = orders.place_name{ order = o, stage = d, group = g, round = r.round, phase = r.phase, parity = r.parity, rank = rank }
  if r.phase and r.parity and r.parity ~= r.phase % 2 then
    r.at = r.at .. (": it waits for parity %d, but round %d's wait is for parity %d (a parity off by one)"):format(r.parity,
      r.round, r.phase % 2)
  elseif r.kind == "deadlock" and r.phase and r.phase >= 0 then
    -- phase p of [d][g] completes when the group before g passes its round p turn at stage d
    r.waits_for = ("group %d's pass of its round %d turn at stage %d"):format((g - 1) % o.groups, r.phase, d)
    r.at = r.at .. ": it waits for " .. r.waits_for
  end
end

return M
