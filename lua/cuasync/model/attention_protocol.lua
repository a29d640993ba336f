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
-- M.simulate(problem, { tiles, stages, runs, seed, mutate = { no_pass = g | release_twice = true |
-- skip_release_k = true } }) -> the model's result (r.ok, r.kind, r:report()). Pure Lua.
local protocol = require("cuasync.model.protocol")
local util = require("cuasync.util")

local M = {}
M.MUTATIONS = { no_pass = true, release_twice = true, skip_release_k = true }

function M.spec(p, tiles, stages, m)
  m = m or {}
  local G, S, iters = p.consumers, stages, 2 * tiles
  local pingpong = p.schedule == "pingpong"
  local depth = p.overlap and 1 or 2
  local barriers = { full = { count = 1, n = S }, empty = { count = G, n = S }, q_full = 1 }
  if pingpong then barriers.math = { count = 1, n = depth * G } end
  local TX, QTX = p.kv_tile * p.d * 2, p.q_tile * p.d * 2
  local roles = {}
  roles.producer = function(t)
    t:arrive_expect_tx(t.bar.q_full, QTX)
    t:bulk(QTX, t.bar.q_full)
    for i = 0, iters - 1 do
      local s, pass = i % S, math.floor(i / S)
      t:wait_parity(t.bar.empty[s], (1 + pass) % 2, pass - 1)
      t:arrive_expect_tx(t.bar.full[s], TX)
      t:bulk(TX, t.bar.full[s])
    end
  end
  for g = 0, G - 1 do
    roles["consumer" .. g] = function(t)
      local turn = 0
      local function wait_full(i)
        local s, pass = i % S, math.floor(i / S)
        t:wait_parity(t.bar.full[s], pass % 2, pass)
      end
      local function release(i)
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
      t:wait_parity(t.bar.q_full, 0, 0)
      if not p.overlap then
        for j = 0, tiles - 1 do
          wait_full(2 * j); take_turn(); if not (m.skip_release_k and j == 0) then release(2 * j) end
          wait_full(2 * j + 1); take_turn(); release(2 * j + 1)
        end
        return
      end
      wait_full(0); take_turn(); if not m.skip_release_k then release(0) end
      for j = 1, tiles - 1 do
        wait_full(2 * j); wait_full(2 * j - 1); take_turn()
        release(2 * j); release(2 * j - 1)
      end
      wait_full(iters - 1); take_turn(); release(iters - 1)
    end
  end
  return { barriers = barriers, roles = roles }
end

function M.simulate(p, o)
  o = o or {}
  util.kind("attention.simulate", "options", o, "table")
  util.known_fields("attention.simulate", o, { tiles = true, stages = true, runs = true, seed = true, mutate = true })
  local m = o.mutate or {}
  util.known_fields("attention.simulate", m, M.MUTATIONS, "mutate")
  local spec = M.spec(p, util.int_in("attention.simulate", "tiles", o.tiles or 4, 1, 64),
                      util.int_in("attention.simulate", "stages", o.stages or p.stages, 2, 16), m)
  spec.runs, spec.seed, spec.explore = o.runs or 50, o.seed, "random"
  return protocol.run(spec)
end

return M
