-- The canonical producer/consumer protocol of a pipeline plan, as model.run roles: what
-- pipeline.cuh's pipeline<Config> does, with the plan's numbers (and a mutation's faults). Pure Lua.
--   producer (one elected thread per block): for i: wait empty[s] (parity starts at 1), arrive.expect_tx
--     on full[s] with tx_bytes, issue each load's copies (multicast: one slice to every block of the
--     line); then, in a cluster, producer_tail: wait the last `stages` releases, so that no peer
--     still signals its barriers when the block exits.
--   consumer (one per arrival on empty; with release = "thread", one per warp whose 32 lanes
--     arrive in one step, as the cp.async roles do): for i: wait full[s] (parity starts at 0),
--     use, arrive on empty[s] of every block whose copies land here.
--   unified: consumer 0 is also the producer: it fills the first `stages` stages, then refills stage
--     i after it released iteration i - stages.
local util = require("cuasync.util")
local protocol = require("cuasync.model.protocol")
local plans = require("cuasync.model.pipeline_plan")
local names = require("cuasync.model.barrier_names")
local order = require("cuasync.model.order_protocol")

local M = {}

M.MAX_WORK = 250000   -- iterations x runs x simulated roles of one simulate call
M.MUTATIONS = { tx_delta = true, consumer_arrivals = true, parity_flip = true, producer_exits_at = true,
                skip_commit = true, wait_depth_delta = true, early_read = true }
for k in pairs(order.MUTATIONS) do M.MUTATIONS[k] = true end   -- an order's faults (order_protocol.lua)
local CP_ONLY = { skip_commit = 'completion = "mbarrier"', wait_depth_delta = 'completion = "group"', early_read = "cp.async" }

function M.check_mutation(plan, m)
  util.kind("pipeline.mutate", "argument", m, "table")
  util.known_fields("pipeline.mutate", m, M.MUTATIONS)
  local n = 0
  for _ in pairs(m) do n = n + 1 end
  if n == 0 then
    util.fail("pipeline.mutate", "name a mutation: tx_delta, consumer_arrivals, parity_flip, producer_exits_at, skip_commit, wait_depth_delta or early_read")
  end
  local cp = plan.kind == "cp_async"
  for k, what in pairs(CP_ONLY) do
    if m[k] ~= nil and not (cp and (what == "cp.async" or what == ('completion = "%s"'):format(plan.completion))) then
      util.fail("pipeline.mutate", ("%s is a fault of %s plans; pipeline '%s' is %s"):format(k, what, plan.name,
        cp and ('completion = "%s"'):format(plan.completion) or "a TMA/bulk plan"))
    end
  end
  if m.skip_commit ~= nil then util.int_in("pipeline.mutate", "skip_commit", m.skip_commit, 0, 2 ^ 31) end
  if m.wait_depth_delta ~= nil then util.int_in("pipeline.mutate", "wait_depth_delta", m.wait_depth_delta, 1, plans.MAX_STAGES) end
  if m.early_read ~= nil and m.early_read ~= true then
    util.fail("pipeline.mutate", ("early_read must be true (got %s)"):format(util.describe(m.early_read)))
  end
  if m.tx_delta ~= nil and cp then
    util.fail("pipeline.mutate", "tx_delta: a cp.async plan arms no tx bytes (its full barrier counts arrivals)")
  end
  if m.tx_delta ~= nil then
    util.int_in("pipeline.mutate", "tx_delta", m.tx_delta, -plan.tx_bytes, plans.MAX_TX - plan.tx_bytes)
    if m.tx_delta == 0 then util.fail("pipeline.mutate", "tx_delta = 0 changes nothing") end
  end
  if m.consumer_arrivals ~= nil then
    util.int_in("pipeline.mutate", "consumer_arrivals", m.consumer_arrivals, 1, 1024)
    if m.consumer_arrivals == plan.roles.arrivals then
      util.fail("pipeline.mutate", ("consumer_arrivals = %d is the plan's own count"):format(m.consumer_arrivals))
    end
  end
  if m.parity_flip ~= nil and m.parity_flip ~= true then
    util.fail("pipeline.mutate", ("parity_flip must be true (got %s)"):format(util.describe(m.parity_flip)))
  end
  if m.producer_exits_at ~= nil then util.int_in("pipeline.mutate", "producer_exits_at", m.producer_exits_at, 0, 2 ^ 31) end
  order.check_mutation(plan, m)
  return m
end

local function bar_key(plan, which, r)
  return names.key(which, plan.cluster_size > 1 and r or nil)
end

-- The model.run spec for `iterations` iterations of the plan (mutated by m, or nil); with an
-- order, its consumers take turns a tile of `tile` iterations at a time (order_protocol.lua).
function M.spec(plan, iterations, m, tile)
  m = m or {}
  local S, blocks = plan.stages, plan.cluster_size
  local tx_arm = plan.tx_bytes + (m.tx_delta or 0)
  local arrivals = m.consumer_arrivals or plan.roles.arrivals
  local barriers, roles = {}, {}
  for r = 0, blocks - 1 do
    barriers[bar_key(plan, "full", r)] = { count = plan.full_count, n = S }
    barriers[bar_key(plan, "empty", r)] = { count = plan.empty_count, n = S }
    if plan.order then order.barriers(plan, barriers, blocks > 1 and ("b%d_"):format(r) or "", m) end
  end
  -- each load's copies from block r: to itself, or one slice to every block of its line
  local function issue(t, r, s)
    for _, l in ipairs(plan.loads) do
      local slice = l.bytes * l.boxes
      local targets = l.multicast and plans.line(plan.cluster, l.multicast, r) or { r }
      for _, p in ipairs(targets) do t:bulk(slice, t.bar[bar_key(plan, "full", p)][s]) end
    end
    if #plan.loads == 0 then t:bulk(plan.tx_bytes, t.bar[bar_key(plan, "full", r)][s]) end
  end
  local function produce(t, r, i)
    local s, pass = i % S, math.floor(i / S)
    t:wait_parity(t.bar[bar_key(plan, "empty", r)][s], (1 + pass) % 2, pass - 1)
    t:arrive_expect_tx(t.bar[bar_key(plan, "full", r)][s], tx_arm)
    issue(t, r, s)
  end
  local function consume(t, r, i, k)
    local s, pass = i % S, math.floor(i / S)
    local parity = pass % 2
    if m.parity_flip then parity = 1 - parity end
    t:wait_parity(t.bar[bar_key(plan, "full", r)][s], parity, pass)
    for _, p in ipairs(plans.peers(plan, r)) do t:arrive(t.bar[bar_key(plan, "empty", p)][s], k or 1, pass) end
  end
  -- `total` consumer arrivals of block r as roles: one per warp of per-thread arrivals (its lanes
  -- arrive together: 992 threads are 31 roles, not 992, and simulate in seconds), else one each
  local chunk = plan.roles.release == "thread" and 32 or 1
  local function consumers(key, r, total)
    if total <= 0 then return end
    local full, rest = math.floor(total / chunk), total % chunk
    if full > 0 then
      roles[key .. "consumer"] = { function(t) for i = 0, iterations - 1 do consume(t, r, i, chunk) end end, n = full }
    end
    if rest > 0 then
      roles[key .. "consumer_lanes"] = function(t) for i = 0, iterations - 1 do consume(t, r, i, rest) end end
    end
  end
  local last = m.producer_exits_at and math.min(m.producer_exits_at, iterations) or iterations
  local function tail(t, r)
    if blocks == 1 or m.producer_exits_at then return end
    for i = last, last + S - 1 do
      local s, pass = i % S, math.floor(i / S)
      t:wait_parity(t.bar[bar_key(plan, "empty", r)][s], (1 + pass) % 2, pass - 1)
    end
  end
  for r = 0, blocks - 1 do
    local key = blocks > 1 and ("b%d_"):format(r) or ""
    if plan.roles.unified then
      roles[key .. "thread0"] = function(t)
        for i = 0, math.min(S, last) - 1 do produce(t, r, i) end
        for i = 0, iterations - 1 do
          consume(t, r, i)
          if i + S < last then produce(t, r, i + S) end
        end
        tail(t, r)
      end
      consumers(key, r, arrivals - 1)
    else
      roles[key .. "producer"] = function(t)
        for i = 0, last - 1 do produce(t, r, i) end
        tail(t, r)
      end
      if plan.order then order.consumers(plan, roles, key, r, iterations, tile, consume, m) else consumers(key, r, arrivals) end
    end
  end
  return { barriers = barriers, roles = roles }
end

-- A cp.async plan (one block: its copies land in its own stages only), with a role per warp: its
-- lanes copy and arrive together (n arrivals in one step; skip_commit drops one lane's).
--   producer warp: wait empty[s]; one copy per load into stage[s]; noinc arrival of its lanes on
--     full[s] (completion "mbarrier") or commit_group ("group")
--   consumer warp: ("group": wait_group with the groups committed after stage i in flight, then
--     its lanes arrive on full[s]); wait full[s]; read stage[s]; its release arrivals on empty[s]
--   unified: each warp produces and consumes, refilling stage i after it released iteration i - stages.
function M.spec_cp(plan, iterations, m)
  local S, r = plan.stages, plan.roles
  local group = plan.completion == "group"
  local arrivals = m.consumer_arrivals
  local function release_n(w, lanes)
    if arrivals then return w == 0 and arrivals or 0 end   -- the mutated count, from one warp
    if r.release == "thread" then return lanes end
    if r.release == "warp" then return 1 end
    return w % 4 == 0 and 1 or 0
  end
  local function produce(t, lanes, i, state, first)
    local s, pass = i % S, math.floor(i / S)
    t:wait_parity(t.bar.empty[s], (1 + pass) % 2, pass - 1)
    for _, l in ipairs(plan.loads) do t:cp_async(l.bytes, ("stage[%d]"):format(s), i) end
    if group then
      t:commit_group()
      state.commits = i + 1
    else
      local n = lanes - ((m.skip_commit == i and first) and 1 or 0)
      if n > 0 then t:cp_async_arrive(t.bar.full[s], n, true) end
    end
  end
  local function consume(t, w, lanes, i, state)
    local s, pass = i % S, math.floor(i / S)
    local stage = ("stage[%d]"):format(s)
    if m.early_read then t:read(stage, i) end
    if group then
      -- the groups committed after stage i may stay in flight (stages - 1 in the steady state);
      -- wait_depth_delta lets that many more
      t:wait_group(math.max(0, math.min(S - 1, state.commits - (i + 1))) + (m.wait_depth_delta or 0))
      t:arrive(t.bar.full[s], lanes, pass)
    end
    local parity = pass % 2
    if m.parity_flip then parity = 1 - parity end
    t:wait_parity(t.bar.full[s], parity, pass)
    t:read(stage, i)
    local n = release_n(w, lanes)
    if n > 0 then t:arrive(t.bar.empty[s], n, pass) end
  end
  local last = m.producer_exits_at and math.min(m.producer_exits_at, iterations) or iterations
  local roles = {}
  local function lanes_of(total, w) return math.min(32, total - 32 * w) end
  if r.unified then
    local warps = math.ceil(r.block / 32)
    for w = 0, warps - 1 do
      local lanes = lanes_of(r.block, w)
      roles[("warp%02d"):format(w)] = function(t)
        local state = { commits = 0 }
        for i = 0, math.min(S, last) - 1 do produce(t, lanes, i, state, w == 0) end
        for i = 0, iterations - 1 do
          consume(t, w, lanes, i, state)
          if i + S < last then produce(t, lanes, i + S, state, w == 0) end
        end
      end
    end
  else
    roles.producer = { function(t, w)
      local state = {}
      for i = 0, last - 1 do produce(t, lanes_of(plan.producer_threads, w), i, state, w == 0) end
    end, n = math.ceil(plan.producer_threads / 32) }
    roles.consumer = { function(t, w)
      for i = 0, iterations - 1 do consume(t, w, lanes_of(r.consumer_threads, w), i, {}) end
    end, n = r.consumer_warps }
  end
  return { barriers = { full = { count = plan.full_count, n = S }, empty = { count = plan.empty_count, n = S } }, roles = roles }
end

-- Simulate; the result names the stage (and block) of the barrier at fault.
function M.simulate(plan, o, m)
  o = o or {}
  util.kind("pipeline.simulate", "argument", o, "table")
  util.known_fields("pipeline.simulate", o, { iterations = true, seed = true, runs = true, explore = true, bound = true,
                                              async = true, tile_iterations = true })
  local iterations = util.int_in("pipeline.simulate", "iterations", o.iterations or 2 * plan.stages + 1, 1, M.MAX_WORK)
  local runs = util.int_in("pipeline.simulate", "runs", o.runs or 20, 1, M.MAX_WORK)
  local many, what = runs, "runs"
  if o.explore == "exhaustive" then
    many, what = util.int_in("pipeline.simulate", "bound", o.bound or 2000, 1, M.MAX_WORK), "bound"
  end
  local tile = order.tile(plan, o.tile_iterations)
  local spec = plan.kind == "cp_async" and M.spec_cp(plan, iterations, m or {}) or M.spec(plan, iterations, m, tile)
  -- the work grows with the roles too (each is a simulated thread or warp): the defaults shrink
  -- the runs to fit; what the caller asked for is refused when over
  local roles = 0
  for _, role in pairs(spec.roles) do roles = roles + (type(role) == "table" and role.n or 1) end
  if o.runs == nil and what == "runs" then
    many = math.max(1, math.min(runs, math.floor(M.MAX_WORK / (iterations * roles))))
    runs = many
  end
  if iterations * many * roles > M.MAX_WORK then
    util.fail("pipeline.simulate", ("iterations x %s x roles = %d x %d x %d exceeds %d simulated iterations per call (fewer iterations, or split the %s over seeds)"):format(
              what, iterations, many, roles, M.MAX_WORK, what))
  end
  spec.seed, spec.runs, spec.explore, spec.bound = o.seed, runs, o.explore, o.bound
  spec.async = o.async
  local r = protocol.run(spec)
  r.iterations = iterations
  local which, s, b = names.parse(not r.ok and r.barrier)
  if which then r.block, r.stage, r.which = b or 0, s, which end
  if plan.order then order.result(r, plan, which, s, b) end
  if which and names.WHICH[which] then
    -- placed in the words the watchdog's hang message uses for the same barrier (barrier_names)
    r.pipeline = plan.name
    if r.phase then r.iteration = names.iteration(which, s, r.phase, plan.stages) end
    r.at = names.place{ pipeline = plan.name, which = which, stage = s, phase = r.phase, parity = r.parity,
                        iteration = r.iteration, rank = b }
  end
  return r
end

return M
