-- The attention forward with kv_tile = 176 (FlashAttention-3's kv tile at head dim 128: 11 k16
-- steps, an m64n176k16 S MMA, 88 accumulator registers a thread). CPU: the plan's derivations and
-- refusals (a fifth stage does not fit shared memory; three consumer warpgroups lack the
-- registers), the protocol through the CPU model, and the PTX of the variants it serves (the n176
-- MMA, no spills with the watchdog or without). GPU (#gpu): against the CPU reference on edge
-- shapes (s = 100 < one tile, 300 and 352 = 2 tiles: a partial tile and none; d 64, 128; causal
-- and not; cooperative and ping-pong, with the overlap and without; the persistent walk), and a
-- large shape against the f32 reference. Output poisoned first (support/attention_check.lua).
local H = require("helper")
local attention = require("cuasync.kernels.attention")
local model = require("cuasync.model.attention")
local AC = require("support.attention_check")

local plan = AC.planner{ b = 2, h = 3, s = 300, d = 128, causal = false, q_tile = 128, kv_tile = 176, stages = 4 }

describe("attention kv_tile 176", function()
  local gpu_it = H.gpu_it(it, pending)

  it("derives a 176 x d stage and fits four stages at d 128 (not five); refuses three consumer warpgroups by registers", function()
    local P = plan()
    assert.equal(176 * 128 * 2, P.tx_bytes)
    assert.equal(220, model.registers_needed(128, 176))   -- S 88 + O 64 + P 44 + 24: two warpgroups get 240
    assert.equal(176 * 64 * 2, plan{ d = 64 }.tx_bytes)
    plan():check("sm_90")
    local ok, err = pcall(function() plan{ stages = 5 }:check("sm_90") end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("dynamic shared memory", 1, true), tostring(err))
    ok, err = pcall(plan, { q_tile = 192 })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("cuasync.attention: q_tile = 192, kv_tile = 176, d = 128: a consumer thread needs about 220 registers (S 88 + O 64 + P 44 + 24) but 3 consumer warpgroups get 160 each", 1, true), tostring(err))
  end)

  it("walks its ring and turns in the CPU model, every schedule; a planted fault is found", function()
    for _, v in ipairs({ { "cooperative", false }, { "cooperative", true }, { "pingpong", false }, { "pingpong", true } }) do
      for tiles = 1, 3 do
        local r = attention.simulate(plan{ s = 400, causal = true, schedule = v[1], overlap = v[2] }, { tiles = tiles, runs = 10 })
        assert.is_true(r.ok, r.ok or r:report())
      end
    end
    local r = attention.simulate(plan{ schedule = "pingpong", overlap = true }, { tiles = 3, mutate = { release_twice = true } })
    assert.equal("over_arrival", r.kind, r.ok and "no fault found" or r:report())
  end)

  it("compiles for sm_90a with the n176 MMA and no spills (with the watchdog; the first also without), cooperative and ping-pong, default grid and persistent", function()
    local lines = {}
    for _, o in ipairs({ { schedule = "cooperative", overlap = true, bare = true }, { schedule = "pingpong", overlap = true, causal = true },
                         { schedule = "cooperative", overlap = false, q_tile = 64 },
                         { schedule = "cooperative", overlap = true, persistent = true, sms = 132, b = 4, h = 16, s = 4096 } }) do
      local with_bare = o.bare
      o.bare = nil
      local P = plan(o)
      local prog = attention.program(P, { arch = "sm_90a" })
      local ptx = prog:ptx()
      assert.truthy(ptx:find("wgmma.mma_async.sync.aligned.m64n176k16.f32.bf16.bf16", 1, true), "no m64n176k16")
      local r = prog:resources().attention_fwd
      local bare = with_bare and attention.program(P, { arch = "sm_90a", watchdog = false }):resources().attention_fwd
      local name = ("%s overlap %s q_tile %d%s"):format(o.schedule, tostring(o.overlap), o.q_tile or 128, o.persistent and " persistent" or "")
      assert.equal(0, r.spill_stores + r.spill_loads, name .. ": spills with the watchdog")
      if bare then assert.equal(0, bare.spill_stores + bare.spill_loads, name .. ": spills without the watchdog") end
      lines[#lines + 1] = ("%s: %d registers, smem %d B"):format(name, r.registers, P.smem_bytes)
    end
    print("\n" .. table.concat(lines, "\n"))
  end)

  -- six cases, each a compile (the make test runs near the device command's limit): every one of
  -- d 64 and 128, causal and not, a partial last tile (100, 300) and none (352), both schedules, the
  -- overlap and not, the persistent walk with several units a block (sms = 3), causal and not
  gpu_it("matches the CPU reference on edge shapes (s = 100, 300, 352; d 64, 128; causal and not; each schedule; persistent)", function()
    local cases = {
      { s = 100, d = 128, causal = false, q_tile = 128, schedule = "cooperative", overlap = true },
      { s = 100, d = 64, causal = true, q_tile = 64, schedule = "cooperative", overlap = false },
      { s = 300, d = 128, causal = true, q_tile = 128, schedule = "pingpong", overlap = true },
      { s = 300, d = 64, causal = true, q_tile = 128, schedule = "cooperative", overlap = true, persistent = true, sms = 3 },
      { s = 352, d = 128, causal = false, q_tile = 128, schedule = "pingpong", overlap = false, persistent = true, sms = 3 },
      { s = 352, d = 128, causal = true, q_tile = 128, schedule = "cooperative", overlap = true },
    }
    local lines = {}
    for i, o in ipairs(cases) do
      o.b, o.h, o.kv_tile, o.stages, o.out = 1, 2, 176, 2 + i % 3, i % 2 == 0 and "bf16" or "f32"
      local data = AC.shape_data(1, 2, o.s, o.d, o.causal)
      lines[#lines + 1] = AC.check(o, data)
      data.q:close(); data.k:close(); data.v:close()
    end
    print("\n" .. table.concat(lines, "\n"))
  end)

  gpu_it("a large shape matches the f32 reference on the device (build's verify), causal and not", function()
    local cuasync = require("cuasync")
    for _, v in ipairs({ { false, false }, { true, true } }) do
      local causal, persistent = v[1], v[2]
      local b, h, s, d = 2, 4, 1500, 128   -- 1500 = 8 tiles of 176 and 92 keys
      local n = b * h * s * d
      local bufs = { q = cuasync.alloc(n * 2), k = cuasync.alloc(n * 2), v = cuasync.alloc(n * 2), o = cuasync.alloc(n * 2),
                     lse = cuasync.alloc(b * h * s * 4) }
      for _, f in ipairs({ "q", "k", "v" }) do attention.random(bufs[f], n, H.random_u32()) end
      local B = attention.build({ b = b, h = h, s = s, d = d, causal = causal, q_tile = 128, kv_tile = 176, stages = 4,
                                  schedule = "cooperative", overlap = true, persistent = persistent or nil }, bufs)
      B.poison()
      B.run()
      cuasync.synchronize()
      local ok, why = B.verify()
      assert.is_true(ok, ("causal %s persistent %s: %s"):format(tostring(causal), tostring(persistent), tostring(why)))
      for _, x in pairs(bufs) do x:close() end
    end
  end)
end)
