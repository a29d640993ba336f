-- The protocol of kernels-src/attention_fwd.cu as the CPU model runs it (model/protocol.lua): the
-- producer and each consumer warpgroup as roles, walking the plan's ring exactly as the kernel's
-- loops do (P:simulate checks the plan's generic walk; this checks the kernel's own order):
--   producer: Q once (arrive_expect_tx on q_full, the copy), then for each kv tile j the K tile
--     (iteration 2j) and the V tile (2j + 1): wait empty[s], arm full[s], the copy.
--   consumer warpgroup (one arrival on empty[s] a stage: release = "warpgroup"): wait for Q; then
--     without overlap, per tile: K's full, [turn], release K, V's full, [turn], release V;
--     with overlap: K_0, [turn], release; then per tile j >= 1: K_j's and V_j-1's full, [turn
--     for both products], release K_j, release V_j-1 (out of ring order); last: V_T-1, [turn].
--   ping-pong: turn t of group g waits on math[t % depth][g] (group 0 for the last group's pass of
--     the round before) and passes onto math[t % depth][g + 1]: the plan's ordered barrier.
--   persistent (several units a block, each with its own tile count): the ring's iteration and
--     the turns run on from unit to unit; the producer loads unit u's K_0, then waits q_empty's
--     phase u - 1 (u > 0) and loads Q on q_full; the consumers wait q_full's phase u and, once
--     their S MMAs are done (without overlap after the unit's loop, with it before the last V's
--     wait), arrive once each on q_empty (count: the consumer warpgroups).
-- M.simulate(problem, { tiles, units, stages, runs, seed, mutate = { no_pass = g | release_twice = true |
-- skip_release_k = true | skip_q_wait = u | skip_q_release = u | restart_ring = true | lag_ring = true } }) -> the
-- model's result (r.ok, r.kind, r:report()). units: a list of tile counts, one a unit (persistent
-- plans; default { tiles, tiles - 1, ... } down to 1, three units at most). Pure Lua.
local protocol = require("cuasync.model.protocol")
local util = require("cuasync.util")

local M = {}
M.MUTATIONS = { no_pass = true, release_twice = true, skip_release_k = true, skip_q_wait = true, skip_q_release = true,
                restart_ring = true, lag_ring = true }

-- units: the tile counts of the block's units in order ({ tiles } without persistent).
function M.spec(p, units, stages, m)
  m = m or {}
  local G, S = p.consumers, stages
  local pingpong = p.schedule == "pingpong"
  local depth = p.overlap and 1 or 2
  local barriers = { full = { count = 1, n = S }, empty = { count = G, n = S }, q_full = 1 }
  if p.persistent then barriers.q_empty = G end
  if pingpong then barriers.math = { count = 1, n = depth * G } end
  local TX, QTX = p.kv_tile * p.d * 2, p.q_tile * p.d * 2
  local roles = {}
  local function load_q(t, u)
    if u > 0 then t:wait_parity(t.bar.q_empty, (u - 1) % 2, u - 1) end
    t:arrive_expect_tx(t.bar.q_full, QTX)
    t:bulk(QTX, t.bar.q_full)
  end
  roles.producer = function(t)
    if not p.persistent then load_q(t, 0) end
    local i = 0   -- the ring's iteration: carried across units
    for u, tiles in ipairs(units) do
      for li = 0, 2 * tiles - 1 do
        local s, pass = i % S, math.floor(i / S)
        t:wait_parity(t.bar.empty[s], (1 + pass) % 2, pass - 1)
        t:arrive_expect_tx(t.bar.full[s], TX)
        t:bulk(TX, t.bar.full[s])
        if p.persistent and li == 0 then load_q(t, u - 1) end   -- Q after K_0
        i = i + 1
      end
    end
  end
  for g = 0, G - 1 do
    roles["consumer" .. g] = function(t)
      local turn, base = 0, 0   -- base: the ring iteration of the unit's K_0
      local function wait_full(i)
        i = base + i
        local s, pass = i % S, math.floor(i / S)
        t:wait_parity(t.bar.full[s], pass % 2, pass)
      end
      local function release(i)
        i = base + i
        local s, pass = i % S, math.floor(i / S)
        t:arrive(t.bar.empty[s], 1, pass)
        if m.release_twice and i == 0 then t:arrive(t.bar.empty[s], 1, pass) end
      end
      local function take_turn()   -- wait_turn ... pass_turn; turn.advance()
        if not pingpong then return end
        local d, round = turn % depth, math.floor(turn / depth)
        local phase = g == 0 and round - 1 or round
        t:wait_parity(t.bar.math[d * G + g], (phase + 2) % 2, phase)
        if m.no_pass ~= g then t:arrive(t.bar.math[d * G + (g + 1) % G], 1, round) end
        turn = turn + 1
      end
      -- S reads Q: unit u's copy must have landed (q_full past phase u) and the next unit's not
      -- begun (q_full not past phase u + 1); the model holds no data, so the phase is the check
      local function read_q(u)
        local ph = t.bar.q_full.phase
        if ph ~= u + 1 then
          error(("consumer%d issues S of unit %d reading Q while q_full is at phase %d (%s): %s"):format(g, u, ph,
            ph <= u and "its Q copy has not landed" or "the next unit's Q is already being loaded",
            ph <= u and "a skipped or early Q wait" or "Q released before the unit's S MMAs were done"), 0)
        end
      end
      local function q_done(u)   -- S's MMAs are done with Q (persistent only: Q is loaded once otherwise)
        if p.persistent and m.skip_q_release ~= u then t:arrive(t.bar.q_empty, 1, u) end
      end
      for u0, tiles in ipairs(units) do
        local u, iters = u0 - 1, 2 * tiles
        if m.skip_q_wait ~= u then t:wait_parity(t.bar.q_full, u % 2, u) end
        if not p.overlap then
          for j = 0, tiles - 1 do
            wait_full(2 * j); take_turn(); read_q(u); if not (m.skip_release_k and j == 0 and u == 0) then release(2 * j) end
            wait_full(2 * j + 1); take_turn(); release(2 * j + 1)
          end
          q_done(u)
        else
          wait_full(0); take_turn(); read_q(u); if not (m.skip_release_k and u == 0) then release(0) end
          for j = 1, tiles - 1 do
            wait_full(2 * j); wait_full(2 * j - 1); take_turn(); read_q(u)
            release(2 * j); release(2 * j - 1)
          end
          q_done(u)
          wait_full(iters - 1); take_turn(); release(iters - 1)
        end
        -- lag_ring: the consumers' ring stays on the unit's last V (the kernel's overlapped loop
        -- once released it without advancing; the H200 hung on it)
        if not m.restart_ring then base = base + iters - (m.lag_ring and 1 or 0) end
      end
    end
  end
  return { barriers = barriers, roles = roles }
end

function M.simulate(p, o)
  o = o or {}
  util.kind("attention.simulate", "options", o, "table")
  util.known_fields("attention.simulate", o, { tiles = true, units = true, stages = true, runs = true, seed = true, mutate = true })
  local m = o.mutate or {}
  util.known_fields("attention.simulate", m, M.MUTATIONS, "mutate")
  local tiles = util.int_in("attention.simulate", "tiles", o.tiles or 4, 1, 64)
  local units = { tiles }
  if o.units ~= nil then
    if not p.persistent then
      util.fail("attention.simulate", "units is for persistent plans (persistent = true: a block walks several units; otherwise one)")
    end
    util.list("attention.simulate", "units", o.units)
    if #o.units < 1 or #o.units > 64 then util.fail("attention.simulate", ("units must list 1..64 tile counts (got %d)"):format(#o.units)) end
    units = {}
    for i, n in ipairs(o.units) do units[i] = util.int_in("attention.simulate", ("units[%d]"):format(i), n, 1, 64) end
  elseif p.persistent then
    units = {}
    for n = tiles, math.max(1, tiles - 2), -1 do units[#units + 1] = n end
  end
  for _, f in ipairs({ "skip_q_wait", "skip_q_release" }) do
    if m[f] ~= nil then
      if not p.persistent then util.fail("attention.simulate", ("mutate.%s is a fault of a persistent plan's Q handover"):format(f)) end
      util.int_in("attention.simulate", "mutate." .. f, m[f], 0, #units - 1)
    end
  end
  if m.restart_ring ~= nil and (m.restart_ring ~= true or not p.persistent) then
    util.fail("attention.simulate", "mutate.restart_ring must be true, on a persistent plan (each unit restarts the ring at stage 0, phase 0)")
  end
  if m.lag_ring ~= nil and (m.lag_ring ~= true or not p.persistent) then
    util.fail("attention.simulate", "mutate.lag_ring must be true, on a persistent plan (the consumers' ring one iteration behind after each unit)")
  end
  local spec = M.spec(p, units, util.int_in("attention.simulate", "stages", o.stages or p.stages, 2, 16), m)
  spec.runs, spec.seed, spec.explore = o.runs or 50, o.seed, "random"
  return protocol.run(spec)
end

return M
