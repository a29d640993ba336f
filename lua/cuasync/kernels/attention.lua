-- Drivers of the attention forward kernels: kernels-src/attention_fwd.cu (TMA + wgmma on a
-- cuasync.pipeline plan) and kernels-src/attention_ref.cu (a plain f32 reference and a device-side
-- comparison). Q, K, V bf16 [b*h][s][d] row-major; O bf16 or f32, LSE f32 [b*h][s].
--   local P = attention.plan{ b = 2, h = 16, s = 4096, d = 128, causal = true, q_tile = 128,
--                             kv_tile = 128, stages = 2, out = "bf16", q = bufQ, k = bufK, v = bufV }
--   local k = attention.kernel(P)
--   k:launch(attention.launch_config(P), P.maps.k, P.maps.v, P.maps.q, O, LSE, s, attention.scale_log2(d))
-- The plan: one cuasync.pipeline named "attn" whose one load ("kv") is a kv_tile x d tile, K and
-- V alternating through its ring (iteration 2j: K tile j, 2j + 1: V tile j), so each has barriers
-- of its own; Q (q_tile x d) loaded once a block into the plan's scratch, on a barrier placed
-- after it there. One plan rather than a pipeline each for K and V: it was written before
-- cuasync.layout placed several plans in one kernel (docs/shared-layouts.md), which now allows
-- the two; the alternating ring gives K and V their own full/empty barriers all the same, but V
-- cannot lag K by more than the ring's order allows.
-- The rules (what is refused before any compile) and the CPU reference: model/attention.lua.
local ffi = require("ffi")
local pipeline = require("cuasync.pipeline")
local program = require("cuasync.program")
local tensormap = require("cuasync.tensormap")
local buffer = require("cuasync.buffer")
local device = require("cuasync.device")
local rules = require("cuasync.model.launch_rules")
local util = require("cuasync.util")
local model = require("cuasync.model.attention")
local kernel_protocol = require("cuasync.model.attention_protocol")
local sched = require("cuasync.kernels.attention_sched")

local M = {}
M.SPAN = 64   -- bf16 columns of a box: one 128-byte swizzle row
-- attention_fwd.cu's trace ranges, a unit's boundary: trace = { names = attention.TRACE_NAMES }
M.TRACE_NAMES = { [1] = "q wait", [2] = "epilogue" }
M.reference_cpu = model.reference
M.flops = model.flops
M.check = model.check

-- scale * log2(e), the kernel's scale_log2 argument (scale 1 / sqrt(d) unless given).
function M.scale_log2(d, scale)
  -- the kernel's running max is of the raw scores: a scale <= 0 would turn it into a running min
  if scale ~= nil and not (type(scale) == "number" and scale > 0 and scale < math.huge) then
    util.fail("attention", ("scale must be a finite number above 0 (softmax(scale Q K^T); got %s)"):format(util.describe(scale)))
  end
  return (scale or 1 / math.sqrt(d)) * 1.4426950408889634
end

-- A [b*h][s][d] bf16 map with boxes of 64 columns x rows x 1 head, 128B swizzle: 3D, so a box
-- that hangs over a head's last row loads zeros (the out-of-bounds fill), not the next head's
-- rows. Without a buffer: a plan-only map (no driver: plans and compiles).
local function map(buf, p, rows, which)
  local bytes = p.b * p.h * p.s * p.d * 2
  local size = buf and select(2, buffer.memory("attention", which, buf))
  if size and size ~= bytes then
    util.fail("attention", ("%s holds %d bytes but b x h x s x d bf16 = %d x %d x %d x %d x 2 = %d: mismatched shapes (Q, K and V are each b x h x s x d)"):format(
      which, size, p.b, p.h, p.s, p.d, bytes))
  end
  return tensormap.new{ buffer = buf, ptr = not buf and 256 or nil, bytes = not buf and bytes or nil, encode = buf ~= nil,
    dtype = "bf16", dims = { p.d, p.s, p.b * p.h }, box = { M.SPAN, rows, 1 }, swizzle = "128B", load_only = true }
end

-- attention.plan{ b, h, s, d, causal, q_tile, kv_tile, stages, schedule, overlap, out, persistent, sms[, q, k, v] }:
-- the pipeline (fields .problem, .maps { q, k, v }, .q_bytes; persistent: .sched, the walk of
-- kernels/attention_sched.lua), refused by rule first (model.check).
function M.plan(o)
  local p = model.check(o)
  local S = p.persistent and sched.new(p) or nil   -- before the maps: its refusals need no buffer
  if (o.q ~= nil or o.k ~= nil or o.v ~= nil) and not (o.q and o.k and o.v) then
    util.fail("attention", "give the q, k and v buffers together (or none: a plan-only build)")
  end
  local maps = { q = map(o.q, p, p.q_tile, "q"), k = map(o.k, p, p.kv_tile, "k"), v = map(o.v, p, p.kv_tile, "v") }
  local blocks = p.d / M.SPAN
  local q_box_smem = maps.q.smem_bytes
  local q_bytes = blocks * q_box_smem
  local P = pipeline.new{ name = "attn", stages = p.stages, loads = { { map = maps.k, name = "kv", boxes = blocks } },
    producer = { warps = 4 }, consumer = { warps = 4 * p.consumers }, release = "warpgroup",
    scratch = q_bytes + (p.persistent and 16 or 8),   -- the Q tile, then its barrier (persistent: and q_empty's)
    -- ping-pong: the consumer warpgroups take turns issuing their MMAs (every one reads every
    -- stage); a round is one turn (overlap: S and O issued together) or two (S, then O)
    order = p.schedule == "pingpong" and { name = "math", groups = p.consumers, depth = p.overlap and 1 or 2, consume = "all" } or nil }
  P.problem, P.maps, P.q_bytes, P.q_box_smem, P.q_tx = p, maps, q_bytes, q_box_smem, blocks * maps.q.box_bytes
  P.sched = S
  return P
end

local function plan_of(o)
  util.kind("attention", "argument", o, "table")
  if getmetatable(o) == pipeline.Pipeline then return o end
  return M.plan(o)
end

-- attention.simulate(P[, { tiles, units, stages, runs, seed, mutate }]): the kernel's own walk of
-- the ring (and its turns; persistent: several units a block, each with its tile count) in the
-- CPU model: model/attention_protocol.lua.
function M.simulate(P, o)
  return kernel_protocol.simulate(plan_of(P).problem, o)
end

-- attention.units(P, c): persistent plans, CTA c's work units in the kernel's order, { bh, q0, tiles } each.
function M.units(P, c)
  P = plan_of(P)
  if not P.sched then util.fail("attention.units", "the plan is not persistent (persistent = true walks units; the default grid is one block a q tile)") end
  return sched.units(P, c)
end

-- attention.program(P | plan options[, program fields]): not compiled; the fields may add arch,
-- watchdog, trace, never the defines. The watchdog is on unless told otherwise (a plan program's).
function M.program(P, opts)
  P = plan_of(P)
  local p = P.problem
  local spec = {}
  for k, v in pairs(opts or {}) do spec[k] = v end
  spec.file = "attention_fwd.cu"
  -- traced and persistent: the producer warpgroup keeps 32 registers, not 24 (model.PRODUCER_REGS_TRACED)
  local producer_regs = spec.trace and p.persistent and model.PRODUCER_REGS_TRACED or model.PRODUCER_REGS
  spec.defines = { D = p.d, Q_TILE = p.q_tile, KV_TILE = p.kv_tile, CAUSAL = p.causal and 1 or 0,
                   OUT_F32 = p.out == "f32" and 1 or 0,
                   PINGPONG = p.schedule == "pingpong" and 1 or 0, OVERLAP = p.overlap and 1 or 0, Q_TX = P.q_tx, Q_BOX_SMEM = P.q_box_smem, Q_BARRIER = P.q_bytes,
                   PRODUCER_REGS = producer_regs, MAX_REGS = model.MAX_REGS, PERSISTENT = p.persistent and 1 or 0,
                   -- the watchdog's time-out path inlined: a call in the loop would cost the
                   -- consumers their setmaxnreg raise (kernels-src/cuasync/watchdog.cuh)
                   CUASYNC_WATCHDOG_INLINE = 1 }
  if P.sched then   -- the walk's header, and q_empty's place after q_full
    spec.defines.Q_EMPTY = P.q_bytes + 8
    local headers = {}
    for k, v in pairs(spec.headers or {}) do headers[k] = v end
    for k, v in pairs(P.sched:headers()) do headers[k] = v end
    spec.headers = headers
  end
  return P:program(spec)
end

M.SIGNATURE = "tensormap, tensormap, tensormap, ptr, ptr, u32, f32"
function M.kernel(P, fields)
  return M.program(P, fields):compile():kernel("attention_fwd", M.SIGNATURE)
end

-- One block a q tile of a head: grid (q tiles, b*h); persistent: the scheduler's grid
-- (kernels/attention_sched.lua: at most one block an SM).
function M.launch_config(P, dev)
  local p = P.problem
  if P.sched then return sched.launch_config(P, dev or M.limits()) end
  return P:check(dev or M.limits()):launch_config{ grid = { math.ceil(p.s / p.q_tile), p.b * p.h, 1 } }
end

function M.limits() return rules.limits_of(device.peek()) end

-- The helpers of kernels-src/attention_ref.cu and the bf16 fill of gemm_ref.cu, compiled once.
local helpers
function M.helpers()
  if helpers then return helpers end
  local ref = program.new{ file = "attention_ref.cu" }:compile()
  helpers = { ref = ref:kernel("attention_ref", "ptr, ptr, ptr, ptr, ptr, u32, u32, f32, i32"),
              compare = ref:kernel("attention_compare", "ptr, i32, ptr, u64, f32, f32, ptr"),
              fill = program.new{ file = "gemm_ref.cu" }:compile():kernel("fill_bf16", "ptr, u64, u32"),
              out = buffer.alloc(8) }
  return helpers
end

-- Fresh random bf16 in [-1, 1) into buf (n elements) from seed.
function M.random(buf, n, seed)
  M.helpers().fill:launch({ grid = 1024, block = 256 }, buf, n, seed % 2 ^ 32)
end

-- The f32 reference on the device: o (f32, b*h*s*d), lse (f32, b*h*s).
function M.reference(q, k, v, o, lse, bh, s, d, causal, scale)
  M.helpers().ref:launch({ grid = { math.ceil(s / 32), bh, 1 }, block = 128 }, q, k, v, o, lse, s, d,
    scale or 1 / math.sqrt(d), causal and 1 or 0)
end

-- The elements of got (n, bf16 or f32) outside atol + rtol |want|, and the largest difference.
function M.compare(got, got_dtype, want, n, atol, rtol)
  local h = M.helpers()
  h.out:fill(0)
  h.compare:launch({ grid = 1024, block = 256 }, got, got_dtype == "bf16" and 1 or 0, want, n, atol, rtol, h.out)
  local r = h.out:download("uint32_t", 2)
  return r[0], ffi.cast("float *", r + 1)[0]
end

-- The tolerances of a check against the f32 reference, from bf16 rounding: P goes to bf16 before
-- P V (each weight off by at most 2^-9 of itself, while the row sum l is taken before rounding),
-- so O is off by at most 2^-9 sum_j p_j |v_j| <= 2^-9 for |v| <= 1: atol 2^-8 with margin; a bf16
-- O is rounded once more (2^-9 relative): rtol 2^-8 (f32 O: 2^-12, the f32 sums' order). The LSE
-- comes from f32 maxima and sums only: atol 1e-3 + rtol 1e-4 (exp2/log2 approximations).
M.TOLERANCE = { o = { atol = 2 ^ -8, rtol = { bf16 = 2 ^ -8, f32 = 2 ^ -12 } }, lse = { atol = 1e-3, rtol = 1e-4 } }

-- attention.build(plan options (and watchdog, trace: the program's), { q, k, v, o, lse[, ref_o, ref_lse, stream] }) ->
-- { run, verify, poison, flops, plan, kernel, config }: the driver shape a sweep's build returns.
-- verify() compares O and LSE with the f32 reference (computed on first use unless given).
function M.build(opts, b)
  util.kind("attention", "buffers", b, "table")
  util.known_fields("attention", b, { q = true, k = true, v = true, o = true, lse = true, ref_o = true, ref_lse = true,
                                      stream = true }, "buffers")
  local q = {}
  for k, v in pairs(util.kind("attention", "argument", opts, "table")) do q[k] = v end
  q.q, q.k, q.v = b.q, b.k, b.v
  local watchdog, trace = q.watchdog, q.trace   -- the program's, not the plan's
  q.watchdog, q.trace = nil, nil
  local P = M.plan(q)
  local p = P.problem
  local bh, n = p.b * p.h, p.b * p.h * p.s * p.d
  -- every buffer the kernel or the check writes: at least what b x h x s (x d) of it takes
  local function holds(field, bytes, what)
    local _, size = buffer.memory("attention", field, b[field])
    if size and size < bytes then
      util.fail("attention", ("%s holds %d bytes; %s needs %d"):format(field, size, what, bytes))
    end
  end
  holds("o", n * model.OUTS[p.out], ("b x h x s x d %s"):format(p.out))
  holds("lse", bh * p.s * 4, "b x h x s f32 (the log-sum-exp)")
  if b.ref_o ~= nil then holds("ref_o", n * 4, "b x h x s x d f32 (the reference)") end
  if b.ref_lse ~= nil then holds("ref_lse", bh * p.s * 4, "b x h x s f32 (the reference's log-sum-exp)") end
  local kern = M.kernel(P, { watchdog = watchdog, trace = trace })
  local cfg = M.launch_config(P, device.current())
  cfg.stream = b.stream
  local run = kern:prepare(cfg, P.maps.k, P.maps.v, P.maps.q, b.o, b.lse, p.s, M.scale_log2(p.d))
  local ref_o, ref_lse = b.ref_o, b.ref_lse
  local function verify()
    if not ref_o then
      ref_o, ref_lse = buffer.alloc(n * 4), buffer.alloc(bh * p.s * 4)
      M.reference(b.q, b.k, b.v, ref_o, ref_lse, bh, p.s, p.d, p.causal)
    end
    local T = M.TOLERANCE
    local bad, worst = M.compare(b.o, p.out, ref_o, n, T.o.atol, T.o.rtol[p.out])
    if bad ~= 0 then return false, ("O: %d of %d elements off the reference (largest difference %.3g)"):format(bad, n, worst) end
    bad, worst = M.compare(b.lse, "f32", ref_lse, bh * p.s, T.lse.atol, T.lse.rtol)
    if bad ~= 0 then return false, ("LSE: %d of %d rows off the reference (largest difference %.3g)"):format(bad, bh * p.s, worst) end
    return true
  end
  return { run = run, verify = verify, poison = function() b.o:poison(b.stream); b.lse:poison(b.stream) end,
           flops = model.flops(p.b, p.h, p.s, p.d, p.causal), dtype = "bf16", plan = P, kernel = kern, config = cfg }
end

return M
