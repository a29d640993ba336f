-- The rules and the CPU reference of the attention forward kernel (kernels-src/attention_fwd.cu,
-- driven by kernels/attention.lua), pure Lua: what a problem and a tile must be for the kernel to
-- serve them, the registers a consumer warpgroup has and needs, the work (flops), and a plain
-- softmax(Q K^T * scale) V with the log-sum-exp, in doubles, for small shapes.
local util = require("cuasync.util")
local rules = require("cuasync.model.launch_rules")

local M = {}

M.HEAD_DIMS = { [64] = true, [128] = true }
M.KV_TILES = { [64] = true, [128] = true, [176] = true }   -- 176: FlashAttention-3's at d 128 (11 k16 steps)
M.SCHEDULES = { cooperative = true, pingpong = true }
M.OUTS = { bf16 = 2, f32 = 4 }
M.PRODUCER_REGS = 24   -- the producer warpgroup's registers after setmaxnreg.dec (attention_fwd.cu): one
                       -- thread issues TMA (ptxas: R21 at most); FlashAttention-3 keeps 24 (2 consumer
                       -- warpgroups: the consumers 240; 3: 160, with which d 64 q_tile 192 overlap no longer spills)
M.PRODUCER_REGS_TRACED = 32   -- the same in a traced persistent kernel (kernels/attention.lua): 24 spilled
                              -- its producer (the unit walk's state with the timeline's held records and ring
                              -- addresses); two consumer warpgroups then raise to 232, above the 228 the untraced ones use
M.MAX_REGS = 240       -- the most a consumer warpgroup asks for (setmaxnreg.inc)
-- Registers a consumer thread needs besides its fragments (indices, row max and sum, descriptors,
-- addresses): an estimate, checked against ptxas (spec/kernels/attention_spec.lua reports spills).
M.REG_OVERHEAD = 24

local function fail(msg) util.fail("attention", msg) end

-- The registers each thread starts with under __launch_bounds__(threads, 1), and what a consumer
-- warpgroup raises to with what the producer warpgroup gives up (the kernel's arithmetic).
function M.registers(consumers)
  local threads = 128 * (consumers + 1)
  local base = rules.launch_bound_registers(threads)
  if consumers == 1 then return base, base end   -- no move: a lone consumer already has its cap
  local raised = base + math.floor(128 * (base - M.PRODUCER_REGS) / (128 * consumers))
  return base, math.floor(math.min(raised, M.MAX_REGS) / 8) * 8
end

-- What a consumer thread holds live: S (kv_tile / 2 floats: the m64 x kv_tile accumulator over
-- 128 threads), O (d / 2 floats), P as bf16 pairs (kv_tile / 4 registers), and the overhead.
function M.registers_needed(d, kv_tile)
  return kv_tile / 2 + d / 2 + kv_tile / 4 + M.REG_OVERHEAD
end

-- Checks the options of attention.plan by rule (before any tensor map or compile) and returns the
-- problem with its defaults filled in.
M.FIELDS = { b = true, h = true, s = true, sq = true, skv = true, d = true, causal = true, q_tile = true, kv_tile = true,
             stages = true, schedule = true, overlap = true, out = true, q = true, k = true, v = true,
             persistent = true, sms = true }

function M.check(o)
  util.kind("attention", "argument", o, "table")
  util.known_fields("attention", o, M.FIELDS)
  local b = util.int_in("attention", "b", o.b, 1, 65535)
  local h = util.int_in("attention", "h", o.h, 1, 65535)
  local persistent = o.persistent or false
  if type(persistent) ~= "boolean" then fail(("persistent must be true or false (got %s)"):format(util.describe(persistent))) end
  if o.sms ~= nil and not persistent then
    fail("sms is for persistent = true (the persistent grid's size; the default grid is one block a q tile)")
  end
  if o.sms ~= nil and not (util.is_integer(o.sms) and o.sms >= 1 and o.sms <= 4096) then
    fail(("sms must be an integer in 1..4096 (got %s)"):format(util.describe(o.sms)))
  end
  if b * h > 65535 and not persistent then
    fail(("b x h = %d heads, but a block takes one head's q tile and the grid's y dimension holds at most 65535 (persistent = true walks any count)"):format(b * h))
  end
  if o.s == 0 then fail("s = 0: a sequence needs at least one position (there is nothing to attend to)") end
  local s = util.int_in("attention", "s", o.s, 1, 2 ^ 31 - 1)
  for _, f in ipairs({ "sq", "skv" }) do
    if o[f] ~= nil and o[f] ~= s then
      fail(("%s = %s but s = %d: the kernel serves self-attention shapes (Q, K and V all b x h x s x d; sq = skv = s)"):format(
        f, util.describe(o[f]), s))
    end
  end
  if not M.HEAD_DIMS[o.d] then fail(("d (the head dim) must be 64 or 128 (got %s)"):format(util.describe(o.d))) end
  local d = o.d
  local causal = o.causal or false
  if type(causal) ~= "boolean" then fail(("causal must be true or false (got %s)"):format(util.describe(causal))) end
  local q_tile = o.q_tile or 128
  if not util.is_integer(q_tile) or q_tile % 64 ~= 0 or q_tile < 64 or q_tile > 192 then
    fail(("q_tile must be 64, 128 or 192 (64 query rows per consumer warpgroup; got %s)"):format(util.describe(q_tile)))
  end
  local kv_tile = o.kv_tile or 128
  if not M.KV_TILES[kv_tile] then fail(("kv_tile must be 64, 128 or 176 (got %s)"):format(util.describe(kv_tile))) end
  local stages = util.int_in("attention", "stages", o.stages or 2, 2, 16)
  local schedule = o.schedule or "cooperative"
  if not M.SCHEDULES[schedule] then
    fail(('schedule must be "cooperative" or "pingpong" (got %s)'):format(util.describe(schedule)))
  end
  local consumers = q_tile / 64
  if schedule == "pingpong" and consumers < 2 then
    fail(("schedule \"pingpong\" needs two consumer warpgroups taking turns; q_tile = %d gives one (use q_tile = 128)"):format(q_tile))
  end
  local overlap = o.overlap or false
  if type(overlap) ~= "boolean" then fail(("overlap must be true or false (got %s)"):format(util.describe(overlap))) end
  local out = o.out or "bf16"
  if not M.OUTS[out] then fail(('out must be "bf16" or "f32" (got %s)'):format(util.describe(out))) end
  local _, have = M.registers(consumers)
  local need = M.registers_needed(d, kv_tile)
  if need > have then
    fail(("q_tile = %d, kv_tile = %d, d = %d: a consumer thread needs about %d registers (S %d + O %d + P %d + %d) but %d consumer warpgroups get %d each (65536 / %d threads, raised with the producer's): use a smaller q_tile or kv_tile"):format(
      q_tile, kv_tile, d, need, kv_tile / 2, d / 2, kv_tile / 4, M.REG_OVERHEAD, consumers, have, 128 * (consumers + 1)))
  end
  return { b = b, h = h, s = s, d = d, causal = causal, q_tile = q_tile, kv_tile = kv_tile, stages = stages,
           schedule = schedule, overlap = overlap, out = out, consumers = consumers, persistent = persistent, sms = o.sms }
end

-- The work of a forward pass: 4 b h s^2 d (two products of 2 s^2 d each, per head), halved causal.
function M.flops(b, h, s, d, causal)
  local f = 4 * b * h * s * s * d
  return causal and f / 2 or f
end

-- The kv tiles the q tile starting at row q0 reads (the kernel's loop bound): every tile, or
-- with causal only those with a column at or below the tile's last row.
function M.kv_tiles(s, q0, q_tile, kv_tile, causal)
  local all = math.ceil(s / kv_tile)
  if not causal then return all end
  local last = math.min(q0 + q_tile, s) - 1
  return math.min(all, math.floor(last / kv_tile) + 1)
end

-- The CPU reference: q, k, v are 0-based arrays (anything indexable) of b*h*s*d numbers, row-major
-- [b*h][s][d]; returns o (b*h*s*d) and lse (b*h*s) as Lua tables (0-based): for each head and
-- row i, p_j = exp(scale q_i . k_j - lse_i) over j < s (and j <= i causal), o_i = sum p_j v_j,
-- lse_i = log sum_j exp(scale q_i . k_j). scale defaults to 1 / sqrt(d).
function M.reference(q, k, v, bh, s, d, causal, scale)
  scale = scale or 1 / math.sqrt(d)
  local o, lse = {}, {}
  local x = {}
  for head = 0, bh - 1 do
    local base = head * s * d
    for i = 0, s - 1 do
      local last = causal and i or s - 1
      local mx = -math.huge
      for j = 0, last do
        local dot = 0
        for c = 0, d - 1 do dot = dot + q[base + i * d + c] * k[base + j * d + c] end
        x[j] = dot * scale
        if x[j] > mx then mx = x[j] end
      end
      local sum = 0
      for j = 0, last do x[j] = math.exp(x[j] - mx); sum = sum + x[j] end
      for c = 0, d - 1 do
        local acc = 0
        for j = 0, last do acc = acc + x[j] * v[base + j * d + c] end
        o[base + i * d + c] = acc / sum
      end
      lse[head * s + i] = mx + math.log(sum)
    end
  end
  return o, lse
end

-- x rounded to the nearest bf16 (ties to even), as cvt.rn.bf16x2.f32 does (no overflow: |x| < 2^127).
function M.bf16_round(x)
  if x == 0 or x ~= x then return x end
  local m, e = math.frexp(x)    -- x = m 2^e, 1/2 <= |m| < 1: 8 significant bits kept
  local q = m * 256
  local r = math.floor(q + 0.5)
  if r - q == 0.5 and r % 2 == 1 then r = r - 1 end   -- a tie: to even
  return r / 256 * 2 ^ e
end

-- The kernel's arithmetic in doubles, for the tolerance (spec/kernels/attention_spec.lua): tiles of
-- kv_tile keys, the running max and sum (exp2 of scale log2 e), O rescaled then P added with P
-- rounded to bf16 while the sum takes it unrounded, O / l at the end; o as M.reference's.
function M.emulate(q, k, v, bh, s, d, causal, kv_tile)
  local sl2 = 1 / math.sqrt(d) * 1.4426950408889634
  local o, acc, sc = {}, {}, {}
  for head = 0, bh - 1 do
    local base0 = head * s * d
    for i = 0, s - 1 do
      local m, l = -math.huge, 0
      for c = 0, d - 1 do acc[c] = 0 end
      for j0 = 0, s - 1, kv_tile do
        local mx = m
        for j = j0, j0 + kv_tile - 1 do
          local x = -math.huge
          if j < s and (not causal or j <= i) then
            x = 0
            for c = 0, d - 1 do x = x + q[base0 + i * d + c] * k[base0 + j * d + c] end
          end
          sc[j - j0] = x
          if x > mx then mx = x end
        end
        local base = mx == -math.huge and 0 or mx * sl2
        local corr = 2 ^ (m * sl2 - base)
        m = mx
        for c = 0, d - 1 do acc[c] = acc[c] * corr end
        local sum = 0
        for j = j0, math.min(j0 + kv_tile, s) - 1 do
          local p = 2 ^ (sc[j - j0] * sl2 - base)
          sum = sum + p
          p = M.bf16_round(p)
          for c = 0, d - 1 do acc[c] = acc[c] + p * v[base0 + j * d + c] end
        end
        l = l * corr + sum
      end
      for c = 0, d - 1 do o[base0 + i * d + c] = acc[c] / l end
    end
  end
  return o
end

-- bf16 bits to a number, by arithmetic (no type punning: see gemm_spec's note on LuaJIT aliasing).
function M.bf16_value(x)
  local e, m = math.floor(x / 128) % 256, x % 128
  local v = e == 0 and m * 2 ^ -133 or (1 + m / 128) * 2 ^ (e - 127)
  return x >= 0x8000 and -v or v
end

return M
