-- The attention forward kernel's parts. CPU: the plans (their derivations, the protocol through
-- the checker, the kernel's own walk of the ring and its turns: model/attention_protocol.lua), the refusals by rule before any compile, the CPU reference against a naive
-- formula, and the PTX of attention_fwd.cu (NVRTC, sm_90a): wgmma from shared memory and from
-- registers with B transposed, 3D tensor loads, bounded mbarrier waits, setmaxnreg only with two
-- consumer warpgroups, exp2 as ex2.approx.ftz, no spills with the watchdog or without. GPU (#gpu): first the simple variant (one consumer warpgroup,
-- stages = 2), then every variant, against the CPU reference on small shapes (s = 1, 100, 300:
-- not multiples of the tile; d 64 and 128; causal and not), output poisoned first, LSE checked,
-- the f32 reference against the CPU one, and a large shape against the f32 reference.
-- Tolerances (attention.TOLERANCE, derived from bf16 rounding there): O within 2^-8 + 2^-8 |o|
-- (bf16 out; 2^-12 relative f32 out), LSE within 1e-3 + 1e-4 |lse|.
local cuasync = require("cuasync")
local H = require("helper")
local attention = require("cuasync.kernels.attention")
local model = require("cuasync.model.attention")
local AC = require("support.attention_check")

local plan = AC.planner{ b = 2, h = 3, s = 300, d = 128, causal = false, q_tile = 128, kv_tile = 128, stages = 2 }

describe("attention", function()
  local gpu_it = H.gpu_it(it, pending)

  describe("plan", function()
    it("derives the K/V ring, the roles and Q's place from the shapes", function()
      local P = plan()
      assert.equal(128 * 128 * 2, P.tx_bytes)        -- one kv_tile x d bf16 tile a stage: K or V
      assert.equal(384, P.block)                       -- a producer warpgroup and two consumer ones
      assert.equal(2, P.empty_count)                   -- one release per consumer warpgroup
      assert.equal(2 * 128 * 128, P.q_bytes)           -- Q: two 64-column boxes of 128 rows
      assert.equal(P.q_bytes + 8, P.scratch_bytes)     -- then Q's barrier
      assert.equal(2 * 128 * 64 * 2, P.q_tx)
      local P64 = plan{ d = 64, q_tile = 64, kv_tile = 64, stages = 4 }
      assert.equal(64 * 64 * 2, P64.tx_bytes)
      assert.equal(256, P64.block)
      assert.equal(1, P64.empty_count)
      assert.truthy(P:explain():find("2 boxes per stage", 1, true))
      P:check("sm_90")
      P64:check("sm_90")
    end)

    it("runs its protocol through the checker, and a planted fault is found", function()
      local P = plan{ stages = 3 }
      local r = P:simulate{ iterations = 12, runs = 10 }
      assert.is_true(r.ok, r.ok or r:report())
      assert.is_false(P:mutate{ tx_delta = -16 }:simulate{ iterations = 12 }.ok)
      -- ping-pong: the warpgroups take turns on the plan's ordered barrier (two turns a K/V pair,
      -- one with overlap); every warpgroup reads every stage (consume = "all")
      for _, overlap in ipairs({ false, true }) do
        local Q = plan{ stages = 3, schedule = "pingpong", overlap = overlap }
        assert.equal(overlap and 1 or 2, Q.order.depth)
        assert.equal(2, Q.empty_count)
        r = Q:simulate{ iterations = 12, tile_iterations = 2, runs = 10 }
        assert.is_true(r.ok, r.ok or r:report())
        assert.is_false(Q:mutate{ skip_pass = 0 }:simulate{ iterations = 12, tile_iterations = 2 }.ok)
      end
    end)

    it("walks the ring and the turns as the kernel does, in the CPU model, for every schedule; planted faults are found", function()
      for _, v in ipairs({ { 64, "cooperative" }, { 128, "cooperative" }, { 128, "pingpong" } }) do
        for _, overlap in ipairs({ false, true }) do
          for stages = 2, 4 do
            for tiles = 1, 4 do
              local P = plan{ d = 64, q_tile = v[1], kv_tile = 64, stages = stages, schedule = v[2], overlap = overlap }
              local r = attention.simulate(P, { tiles = tiles, runs = 20 })
              assert.is_true(r.ok, r.ok or r:report())
            end
          end
        end
      end
      local P = plan{ stages = 2, schedule = "pingpong", overlap = true }
      for _, c in ipairs({ { { no_pass = 0 }, "deadlock" }, { { no_pass = 1 }, "deadlock" }, { { release_twice = true }, "over_arrival" },
                           { { skip_release_k = true }, "deadlock" } }) do
        local r = attention.simulate(P, { tiles = 4, mutate = c[1] })
        assert.equal(c[2], r.kind, r.ok and "no fault found" or r:report())
      end
      assert.has_error(function() attention.simulate(P, { mutate = { bogus = 1 } }) end)
    end)

    it("refuses what the kernel cannot serve, by rule, before any compile", function()
      local cases = {
        { { d = 96 }, "d (the head dim) must be 64 or 128 (got 96)" },
        { { s = 0 }, "s = 0: a sequence needs at least one position" },
        { { sq = 300, skv = 200 }, "skv = 200 but s = 300: the kernel serves self-attention shapes" },
        { { q_tile = 96 }, "q_tile must be 64, 128 or 192" },
        { { kv_tile = 256 }, "kv_tile must be 64, 128 or 176 (got 256)" },
        { { q_tile = 192 }, "q_tile = 192, kv_tile = 128, d = 128: a consumer thread needs about 184 registers (S 64 + O 64 + P 32 + 24) but 3 consumer warpgroups get 160 each" },
        { { schedule = "pingpong", q_tile = 64 }, 'schedule "pingpong" needs two consumer warpgroups taking turns; q_tile = 64 gives one' },
        { { overlap = "yes" }, "overlap must be true or false" },
        { { schedule = "split" }, 'schedule must be "cooperative" or "pingpong"' },
        { { out = "f16" }, 'out must be "bf16" or "f32"' },
        { { stages = 1 }, "stages must be an integer in 2..16 (got 1)" },
        { { causal = 1 }, "causal must be true or false" },
        { { b = 300, h = 300 }, "b x h = 90000 heads" },
      }
      for _, c in ipairs(cases) do
        local ok, err = pcall(plan, c[1])
        assert.is_false(ok, c[2])
        assert.truthy(tostring(err):find("cuasync.attention: " .. c[2], 1, true), tostring(err))
      end
      for _, bad in ipairs({ 0, -1, 0 / 0, math.huge, "x" }) do
        local ok2, e2 = pcall(attention.scale_log2, 128, bad)
        assert.is_false(ok2)
        assert.truthy(tostring(e2):find("cuasync.attention: scale must be a finite number above 0", 1, true), tostring(e2))
      end
      local ok3, e3 = pcall(attention.simulate, plan{}, { stages = 0 })
      assert.is_false(ok3)
      assert.truthy(tostring(e3):find("cuasync.attention.simulate: stages must be an integer in 2..16 (got 0)", 1, true), tostring(e3))
      -- the shared memory a plan lays out is checked against the device's (4 stages of 32 KiB + Q)
      local ok, err = pcall(function() plan{ stages = 7 }:check("sm_90") end)
      assert.is_false(ok)
      assert.truthy(tostring(err):find("dynamic shared memory", 1, true), tostring(err))
    end)
  end)

  describe("CPU reference", function()
    -- naive: the whole score matrix, softmax without the max shift, then the product
    local function naive(q, k, v, s, d, causal)
      local o, lse = {}, {}
      for i = 0, s - 1 do
        local w, z = {}, 0
        for j = 0, s - 1 do
          local dot = 0
          for c = 0, d - 1 do dot = dot + q[i * d + c] * k[j * d + c] end
          w[j] = (causal and j > i) and 0 or math.exp(dot / math.sqrt(d))
          z = z + w[j]
        end
        for c = 0, d - 1 do
          local acc = 0
          for j = 0, s - 1 do acc = acc + w[j] * v[j * d + c] end
          o[i * d + c] = acc / z
        end
        lse[i] = math.log(z)
      end
      return o, lse
    end

    it("matches the naive formula, causal and not, with its log-sum-exp", function()
      for _, causal in ipairs({ false, true }) do
        local s, d = 17, 64
        local q, k, v = {}, {}, {}
        for i = 0, s * d - 1 do
          q[i] = model.bf16_value((120 + H.random_u32() % 7) * 128 + H.random_u32() % 128 + (H.random_u32() % 2) * 0x8000)
          k[i] = (H.random_u32() % 2001 - 1000) / 1000
          v[i] = (H.random_u32() % 2001 - 1000) / 1000
        end
        local o, lse = model.reference(q, k, v, 1, s, d, causal)
        local no, nl = naive(q, k, v, s, d, causal)
        for i = 0, s * d - 1 do assert.truthy(math.abs(o[i] - no[i]) < 1e-12, ("o[%d]"):format(i)) end
        for i = 0, s - 1 do assert.truthy(math.abs(lse[i] - nl[i]) < 1e-12, ("lse[%d]"):format(i)) end
        if causal then   -- row 0 sees only key 0: o = v_0, lse = q_0 . k_0 / sqrt(d)
          for c = 0, d - 1 do assert.truthy(math.abs(o[c] - v[c]) < 1e-12) end
        end
      end
      assert.equal(4 * 2 * 16 * 4096 * 4096 * 128 / 2, model.flops(2, 16, 4096, 128, true))
    end)

    it("the stated tolerance covers the kernel's arithmetic (P rounded to bf16, O rounded to bf16), emulated", function()
      assert.equal(1, model.bf16_round(1 + 2 ^ -9))            -- a tie goes to even
      assert.equal(1 + 2 ^ -7, model.bf16_round(1 + 3 * 2 ^ -9))
      local T = attention.TOLERANCE
      for _, c in ipairs({ { 150, 64, true, 64 }, { 200, 128, false, 128 }, { 70, 128, true, 128 } }) do
        local s, d, causal, kv_tile = c[1], c[2], c[3], c[4]
        local q, k, v = {}, {}, {}
        for i = 0, s * d - 1 do
          local function r() return model.bf16_value((120 + H.random_u32() % 7) * 128 + H.random_u32() % 128 + (H.random_u32() % 2) * 0x8000) end
          q[i], k[i], v[i] = r(), r(), r()
        end
        local want = model.reference(q, k, v, 1, s, d, causal)
        local got = model.emulate(q, k, v, 1, s, d, causal, kv_tile)
        local worst = 0
        for i = 0, s * d - 1 do
          local e = math.abs(model.bf16_round(got[i]) - want[i])
          assert.truthy(e <= T.o.atol + T.o.rtol.bf16 * math.abs(want[i]), ("s %d d %d: o[%d] off by %g"):format(s, d, i, e))
          worst = math.max(worst, e - T.o.rtol.bf16 * math.abs(want[i]))   -- beyond the output's rounding
        end
        assert.truthy(worst < T.o.atol / 2, ("s %d d %d: %g beyond the output's rounding leaves less than a factor 2 of margin on atol"):format(s, d, worst))
      end
    end)
  end)

  describe("attention_fwd.cu", function()
    -- The overlap's O wait in the PTX: after S's wait (wait_group 1) come the softmax's
    -- exponentials, then the loop's back edge (a branch to a label above), and only then O's wait
    -- (wait_group 0, at the top of the next iteration). ptxas hoists a WARPGROUP.DEPBAR to the
    -- top of its basic block: a wait_group 0 in the softmax's block (the kernel's first form) put
    -- the wait for O's MMAs before the first exponential in the SASS, and nothing overlapped.
    -- Returns whether a back edge lies between the two waits, and the exponentials there.
    local function o_wait_after_back_edge(ptx)
      local w1 = ptx:find("wgmma.wait_group.sync.aligned 1;", 1, true)
      local w0 = w1 and ptx:find("wgmma.wait_group.sync.aligned 0;", w1, true)
      if not w0 then return false, 0 end
      local between = ptx:sub(w1, w0)
      local _, ex2 = between:gsub("ex2%.approx%.ftz%.f32", "")
      local back = false
      for label in between:gmatch("bra[%.%w]*%s+(%$L__BB%d+_%d+);") do
        local at = ptx:find("\n" .. label .. ":", 1, true)
        if at and at < w1 then back = true end
      end
      return back, ex2
    end

    -- every variant the plans allow: d x q_tile x kv_tile x schedule (pingpong: two warpgroups or
    -- three) x overlap; q_tile = 192 where the registers allow it (model.check refuses d 128 kv 128)
    local function variants()
      local out = {}
      for _, d in ipairs({ 64, 128 }) do
        for _, q_tile in ipairs({ 64, 128, 192 }) do
          for _, kv_tile in ipairs({ 64, 128 }) do
            for _, schedule in ipairs(q_tile > 64 and { "cooperative", "pingpong" } or { "cooperative" }) do
              for _, overlap in ipairs({ false, true }) do
                local v = { d = d, q_tile = q_tile, kv_tile = kv_tile, schedule = schedule, overlap = overlap, causal = true }
                if q_tile < 192 or pcall(plan, v) then out[#out + 1] = v end
              end
            end
          end
        end
      end
      return out
    end

    it("compiles every variant for sm_90a with the instructions it claims; ptxas's registers and spills", function()
      local lines = {}
      for _, v in ipairs(variants()) do
        local P = plan(v)
        local name = ("d %3d q_tile %3d kv_tile %3d %-11s overlap %-5s"):format(v.d, v.q_tile, v.kv_tile, v.schedule, tostring(v.overlap))
        local prog = attention.program(P, { arch = "sm_90a" })
        local ptx = prog:ptx()
        local function has(ins, yes)
          assert[yes == false and "falsy" or "truthy"](ptx:find(ins, 1, true), ("%s: %s %s"):format(name, yes == false and "has" or "lacks", ins))
        end
        has(("wgmma.mma_async.sync.aligned.m64n%dk16.f32.bf16.bf16"):format(v.kv_tile))   -- S = Q K^T
        -- O += P V: A from four .b32 registers, imm-trans-b = 1 (V is MN-major)
        assert.truthy(ptx:match(("wgmma%%.mma_async%%.sync%%.aligned%%.m64n%dk16%%.f32%%.bf16%%.bf16 {[^}]+}, {%%%%r%%d+, %%%%r%%d+, %%%%r%%d+, %%%%r%%d+}, %%%%rd%%d+, p, 1, 1, 1;"):format(v.d)),
                      name .. ": no RS wgmma with B transposed")
        has("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes")
        has("mbarrier.try_wait")
        has("cvt.rn.bf16x2.f32")
        has("%globaltimer")   -- the watchdog's clock: waits are bounded
        has("setmaxnreg.inc.sync.aligned.u32", v.q_tile > 64)
        has("wgmma.wait_group.sync.aligned 1", v.overlap)   -- S waited for while O's MMAs run
        if v.overlap then
          local back, ex2 = o_wait_after_back_edge(ptx)
          assert.is_true(back, name .. ": O's wait_group 0 is not past the loop's back edge (the softmax's block would wait for O)")
          assert.truthy(ex2 >= v.kv_tile / 2, ("%s: %d exponentials between S's wait and O's, %d expected"):format(name, ex2, v.kv_tile / 2))
        end
        local r = prog:resources().attention_fwd
        -- no variant spills, with the watchdog (the default: its time-out path inlined, so the
        -- consumers keep their setmaxnreg raise) or without
        local bare = attention.program(P, { arch = "sm_90a", watchdog = false }):resources().attention_fwd
        assert.equal(0, bare.spill_stores + bare.spill_loads, name .. ": spills without the watchdog")
        assert.equal(0, r.spill_stores + r.spill_loads, name .. ": spills with the watchdog")
        has("ex2.approx.ftz.f32")   -- the softmax's exponentials: one MUFU.EX2 each
        has("ex2.approx.f32", false)
        lines[#lines + 1] = ("%s: %d registers (%d without the watchdog), spill stores %d loads %d, smem %d B"):format(
          name, r.registers, bare.registers, r.spill_stores, r.spill_loads, P.smem_bytes)
      end
      print("\n" .. table.concat(lines, "\n"))
    end)

    it("has a reference kernel that fits a launch (static shared memory within 48 KiB, no stack), and the P V probe compiles", function()
      local res, why = cuasync.program{ file = "attention_ref.cu", arch = "sm_90a" }:resources()
      local r = res.attention_ref
      assert.truthy(r, "no resource report for attention_ref: " .. tostring(why))
      assert.truthy(r.static_smem <= 48 * 1024, tostring(r.static_smem))
      assert.equal(0, r.stack)
      assert.equal(0, r.spill_stores)
      -- and the P V probe the GPU part runs first compiles, with its two RS products
      local ptx = cuasync.program{ file = "spec/support/kernels/wgmma_rs.cu", arch = "sm_90a" }:ptx()
      for _, n in ipairs({ 64, 128 }) do
        assert.truthy(ptx:find(("m64n%dk16.f32.bf16.bf16 {[^}]+}, {%%%%r%%d+, %%%%r%%d+, %%%%r%%d+, %%%%r%%d+}, %%%%rd%%d+, p, 1, 1, 1;"):format(n)), tostring(n))
      end
    end)
  end)

  -- Host data, the CPU reference and one variant's check: spec/support/attention_check.lua
  local random_bf16, float_buffer, check, shape_data = AC.random_bf16, AC.float_buffer, AC.check, AC.shape_data

  -- The O += P V product alone (P from registers, V MN-major through desc_mnmajor), N = 64 and 128:
  -- if attention fails for d = 128 only, the descriptor's leading offset (the 64-column blocks'
  -- distance) is the suspect; if both fail, the A fragments or imm-trans-b.
  gpu_it("P V with P from registers and V MN-major matches a CPU product (spec/support/kernels/wgmma_rs.cu)", function()
    local prog = cuasync.program{ file = "spec/support/kernels/wgmma_rs.cu" }:compile()
    for _, n in ipairs({ 64, 128 }) do
      local P, pv = random_bf16(64 * 64)
      local V, vv = random_bf16(64 * n)
      local D = float_buffer(64 * n)
      prog:kernel("pv" .. n, "ptr, ptr, ptr"):launch({ grid = 1, block = 128 }, P, V, D)
      cuasync.synchronize()
      local got = D:download("float", 64 * n)
      for i = 0, 63 do
        for j = 0, n - 1 do
          local want = 0
          for k = 0, 63 do want = want + pv[i * 64 + k] * vv[k * n + j] end
          if not (math.abs(got[i * n + j] - want) < 1e-4) then
            error(("N %d: D[%d][%d] = %s, want %s"):format(n, i, j, tostring(got[i * n + j]), tostring(want)), 0)
          end
        end
      end
      P:close(); V:close(); D:close()
    end
  end)

  gpu_it("the simple variant (one consumer warpgroup, stages = 2) matches the CPU reference", function()
    local data = shape_data(1, 2, 100, 64, false)
    print("\n" .. check({ b = 1, h = 2, s = 100, d = 64, causal = false, q_tile = 64, kv_tile = 64, stages = 2, out = "f32" }, data))
  end)

  gpu_it("every variant matches the CPU reference on edge shapes (s = 1, 100, 300; d 64, 128; causal and not)", function()
    local lines = {}
    for _, s in ipairs({ 1, 100, 300 }) do
      for _, d in ipairs({ 64, 128 }) do
        for _, causal in ipairs({ false, true }) do
          local data = shape_data(1, 2, s, d, causal)
          for _, q_tile in ipairs({ 64, 128 }) do
            for _, kv_tile in ipairs({ 64, 128 }) do
              for _, schedule in ipairs(q_tile > 64 and { "cooperative", "pingpong" } or { "cooperative" }) do
                for _, overlap in ipairs({ false, true }) do
                  local stages = 2 + #lines % 3
                  local out = #lines % 2 == 0 and "bf16" or "f32"
                  lines[#lines + 1] = check({ b = 1, h = 2, s = s, d = d, causal = causal, q_tile = q_tile, kv_tile = kv_tile,
                                              stages = stages, out = out, schedule = schedule, overlap = overlap }, data)
                end
              end
            end
          end
          data.q:close(); data.k:close(); data.v:close()
        end
      end
    end
    print("\n" .. table.concat(lines, "\n"))
  end)

  -- Three consumer warpgroups (q_tile = 192, FlashAttention-3's tile for d = 64): their turns and
  -- register split, wherever the plan allows them (not d = 128 with kv_tile = 128).
  gpu_it("q_tile = 192 (three consumer warpgroups) matches the CPU reference on edge shapes (s = 100, 300)", function()
    local lines = {}
    for _, s in ipairs({ 100, 300 }) do
      for _, d in ipairs({ 64, 128 }) do
        for _, causal in ipairs({ false, true }) do
          local data = shape_data(1, 2, s, d, causal)
          for _, kv_tile in ipairs({ 64, 128 }) do
            for _, schedule in ipairs({ "cooperative", "pingpong" }) do
              for _, overlap in ipairs({ false, true }) do
                local o = { b = 1, h = 2, s = s, d = d, causal = causal, q_tile = 192, kv_tile = kv_tile, stages = 2 + #lines % 3,
                            out = #lines % 2 == 0 and "bf16" or "f32", schedule = schedule, overlap = overlap }
                if pcall(attention.plan, o) then lines[#lines + 1] = check(o, data) end
              end
            end
          end
          data.q:close(); data.k:close(); data.v:close()
        end
      end
    end
    assert.equal(2 * 2 * 2 * 2 * 2 * 2 - 2 * 2 * 2 * 2, #lines)   -- d 128 with kv_tile 128 refused
    print("\n" .. table.concat(lines, "\n"))
  end)

  gpu_it("the f32 reference kernel matches the CPU reference", function()
    for _, c in ipairs({ { 70, 64, false }, { 45, 128, true } }) do
      local s, d, causal = c[1], c[2], c[3]
      local data = shape_data(1, 2, s, d, causal)
      local O, LSE = float_buffer(2 * s * d), float_buffer(2 * s)
      attention.reference(data.q, data.k, data.v, O, LSE, 2, s, d, causal)
      cuasync.synchronize()
      local o, lse = O:download("float", 2 * s * d), LSE:download("float", 2 * s)
      -- f32 sums of at most 70 terms with expf: within 1e-4 of the doubles
      for i = 0, 2 * s * d - 1 do assert.truthy(math.abs(o[i] - data.o[i]) < 1e-4, ("o[%d]"):format(i)) end
      for i = 0, 2 * s - 1 do assert.truthy(math.abs(lse[i] - data.lse[i]) < 1e-4, ("lse[%d]"):format(i)) end
    end
  end)

  gpu_it("a large shape matches the f32 reference on the device (build's verify)", function()
    for _, v in ipairs({ { false, "cooperative", false }, { true, "pingpong", true }, { true, "cooperative", true }, { false, "pingpong", false } }) do
      local causal, schedule, overlap = v[1], v[2], v[3]
      local b, h, s, d = 1, 4, 1000, 128
      local n = b * h * s * d
      local bufs = { q = cuasync.alloc(n * 2), k = cuasync.alloc(n * 2), v = cuasync.alloc(n * 2), o = cuasync.alloc(n * 2),
                     lse = cuasync.alloc(b * h * s * 4) }
      for _, f in ipairs({ "q", "k", "v" }) do attention.random(bufs[f], n, H.random_u32()) end
      local B = attention.build({ b = b, h = h, s = s, d = d, causal = causal, q_tile = 128, kv_tile = 128, stages = 2,
                                  schedule = schedule, overlap = overlap }, bufs)
      B.poison()
      B.run()
      cuasync.synchronize()
      local ok, why = B.verify()
      assert.is_true(ok, ("causal %s %s overlap %s: %s"):format(tostring(causal), schedule, tostring(overlap), tostring(why)))
      for _, x in pairs(bufs) do x:close() end
    end
  end)

  gpu_it("build refuses an output or log-sum-exp buffer smaller than the shape, naming it", function()
    local b, h, s, d = 1, 2, 100, 64
    local n = b * h * s * d
    local bufs = { q = cuasync.alloc(n * 2), k = cuasync.alloc(n * 2), v = cuasync.alloc(n * 2), o = cuasync.alloc(n * 2),
                   lse = cuasync.alloc(b * h * s * 4 - 4) }
    local opts = { b = b, h = h, s = s, d = d, q_tile = 128, kv_tile = 64, stages = 2 }
    local ok, err = pcall(attention.build, opts, bufs)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("cuasync.attention: lse holds 796 bytes; b x h x s f32 (the log-sum-exp) needs 800", 1, true), tostring(err))
    bufs.lse = nil
    ok, err = pcall(attention.build, opts, bufs)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("cuasync.attention: lse must be a device buffer or address (got nil)", 1, true), tostring(err))
  end)
end)
