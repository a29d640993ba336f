-- Drivers of the project's GEMM kernels: kernels-src/gemm_tma.cu (TMA + wgmma on a
-- cuasync.pipeline plan, its tiles walked by a cuasync.scheduler) and kernels-src/gemm_ref.cu (a
-- simple correct reference, random bf16 data and a device-side comparison: kernels/gemm_ref.lua).
-- C = A * B^T with A: M x K, B: N x K bf16 row-major, C: M x N f32 (or bf16: out = "bf16").
--   local P = gemm.plan{ stages = 4, bm = 128, bn = 128, m = M, n = N, k = K, a = bufA, b = bufB,
--                        cluster = 1 | 2, epilogue = "tma" | "direct", scheduler = "persistent" | "stream_k" | "split_k",
--                        splits = n, out = "f32" | "bf16", pdl = false | true }
--   local k = gemm.kernel(P)          -- compiled for the plan (BM, BN, CLUSTER, EPILOGUE, ... as defines)
--   local work, flags = gemm.workspace(P)   -- the turnstile's (stream-K, split-K); zeroed flags
--   k:launch(gemm.launch_config(P, dev, m, n, k), gemm.args(P, C, work, flags))
-- cluster = 2: the two blocks of a cluster share the A tile (each loads half, multicast);
-- epilogue = "tma": C leaves through TMA stores of 64 x 32 chunks staged in the plan's scratch
-- (a row of C whole 16-byte units: n a multiple of 4 for f32, 8 for bf16); "direct": plain stores.
-- The scheduler axis is kernels/gemm_sched.lua's; docs/schedulers.md says what each choice does.
local bit = require("bit")
local pipeline = require("cuasync.pipeline")
local rules = require("cuasync.model.launch_rules")
local device = require("cuasync.device")
local buffer = require("cuasync.buffer")
local util = require("cuasync.util")
local swizzle = require("cuasync.model.swizzle")
local pingpong = require("cuasync.kernels.gemm_pingpong")
local sched = require("cuasync.kernels.gemm_sched")
local ref = require("cuasync.kernels.gemm_ref")
local maps = require("cuasync.kernels.gemm_maps")

local M = {}
M.BK = maps.BK
M.TILES = { "128x128", "128x256", "256x128" }

function M.tile(name)
  local bm, bn = tostring(name):match("^(%d+)x(%d+)$")
  bm, bn = tonumber(bm), tonumber(bn)
  if not bm or bm % 64 ~= 0 or bm < 64 or bm > 256 or not (bn == 64 or bn == 128 or bn == 192 or bn == 256) then
    util.fail("gemm", ('tile must be "BMxBN" with BM 64..256 in steps of 64 and BN 64, 128, 192 or 256 (got %s)'):format(util.describe(name)))
  end
  return bm, bn
end

-- The cooperative kernel is compiled for what __launch_bounds__ gives a thread at launch
-- (ptxas's cap: setmaxnreg.inc raises the count at run time, not the compile's): a consumer
-- thread's BN / 2 accumulators and COOP_RESERVE more must fit it, else ptxas fails (256x192 asks
-- for 122 of 96, 256x256 and 192x256 for 154); refused by rule before any compile.
M.COOP_RESERVE = 32
local function fit_registers(bm, bn)
  local threads = 128 * (1 + bm / 64)
  local cap = rules.launch_bound_registers(threads)
  if bn / 2 + M.COOP_RESERVE > cap then
    sched.fail(("tile %dx%d: a consumer thread's %d accumulators (BN / 2) and the %d registers it needs beside them (gemm.COOP_RESERVE) are more than the %d a thread of its %d-thread block is compiled for (65536 / threads, down to a multiple of 8): use a tile with BN / 2 + %d <= %d"):format(
      bm, bn, bn / 2, M.COOP_RESERVE, cap, threads, M.COOP_RESERVE, cap))
  end
end

M.L2_PROMOTIONS = maps.L2_PROMOTIONS   -- l2_promotion's values, as a set
M.CHUNK_COLS = maps.CHUNK_COLS   -- the TMA epilogue's 64 x 32 chunks of C (kernels-src/gemm_tma.cu)
M.SCHEDULERS = sched.KINDS
M.OUTS = { "f32", "bf16" }
M.TOLERANCE = ref.TOLERANCE   -- verify's, per output type
M.TRACE_NAMES = { [1] = "epilogue" }   -- gemm_tma.cu's trace ranges: trace = { names = gemm.TRACE_NAMES }
-- The consumers' release form unless a plan names one: one arrival per consumer warpgroup per
-- block (valid here: a warpgroup is done with a stage when its wgmma.wait_group returns). On the
-- H200 it and "warp" measured within each other's noise (examples/gemm_ablation.lua); the best
-- cluster-2 point of the flagship sweep came with it, and it sends 4x fewer remote arrivals.
M.RELEASE = "warpgroup"

-- gemm.plan{ stages, bm, bn | tile = "BMxBN", m, n, k[, a, b, cluster, epilogue, release, multicast,
-- raster, scheduler, splits, mode, sms, out, pdl, ablate] }: the pipeline: loads A (in `cluster`
-- multicast slices) and B tiles; one producer warpgroup; bm / 64 consumer warpgroups; the TMA
-- epilogue's scratch. P.sched: the scheduler (kernels/gemm_sched.lua) of scheduler, splits, mode
-- and sms (default: the open device's SM count, else 132).
--   out: C's type, "f32" (default) or "bf16". pdl = true: the kernel waits for the grid before it
--     (griddepcontrol.wait) and lets the next one launch after its last mainloop; gemm.build's
--     launches then go with programmatic = true.
--   release: the pipeline's release form ("warpgroup" | "warp"; see cuasync.pipeline).
--   multicast = false with cluster = 2: each block loads its whole A tile (no multicast): the
--     cluster's scheduling without the sharing, a rung of the ablation.
--   raster = g: output tiles taken in bands of g tile rows (along M), column by column inside a
--     band, so that a wave's A and B panels stay in L2; 1 (default): row by row.
--   ablate = { serial_release, release_cluster, a_leader, trace, plain_c, prefetch_maps }: compile-
--     time switches measured by examples/gemm_ablation.lua (the release loop before the release
--     forms; the remote arrive's release at cluster scope; rank 0 issues every slice of A; a
--     per-block trace; the epilogue unswizzled; A's and B's descriptors prefetched).
--   schedule: "cooperative" (default: gemm_tma.cu, BM / 64 consumer warpgroups share a tile) or
--     "pingpong" (gemm_pingpong.cu: two consumer warpgroups on alternate tiles, taking turns;
--     kernels/gemm_pingpong.lua has its plan and refusals).
--   consumers: with "pingpong", the consumer warpgroups that take turns (2, the default; any other
--     count is refused: the ordered barrier alternates two).
--   store_buffers: the TMA epilogue's chunk buffers per consumer warpgroup (1, the default; 2: a
--     chunk is written while the last one's store still reads its buffer; cooperative only; the
--     scratch grows by the same again).
--   l2_promotion: A's and B's maps' L2 sector promotion ("none", the default; "64B", "128B", "256B").
M.ABLATE = { serial_release = "SERIAL_RELEASE", release_cluster = "RELEASE_CLUSTER", a_leader = "A_LEADER", trace = "TRACE",
             plain_c = "PLAIN_C", prefetch_maps = "PREFETCH_MAPS" }
-- gemm.plan's options: a misspelt one (schedul) would otherwise build the default silently.
-- watchdog and trace are the program's, which gemm.build and callers of gemm.program pass in the
-- same table.
local FIELDS = { watchdog = true, trace = true, stages = true, bm = true, bn = true, tile = true, m = true, n = true, k = true, a = true, b = true,
                 cluster = true, epilogue = true, release = true, multicast = true, raster = true, scheduler = true,
                 splits = true, mode = true, sms = true, out = true, pdl = true, ablate = true, schedule = true,
                 consumers = true, store_buffers = true, l2_promotion = true }

function M.plan(o)
  util.kind("gemm", "argument", o, "table")
  util.known_fields("gemm", o, FIELDS, "plan options")
  if o.tile ~= nil then
    local q = {}
    for k, v in pairs(o) do q[k] = v end
    q.bm, q.bn = M.tile(o.tile)
    q.tile = nil
    o = q
  end
  local cluster = o.cluster or 1
  if cluster ~= 1 and cluster ~= 2 then util.fail("gemm", ("cluster must be 1 or 2 (got %s)"):format(util.describe(cluster))) end
  local epilogue = o.epilogue or "tma"
  if epilogue ~= "tma" and epilogue ~= "direct" then
    util.fail("gemm", ('epilogue must be "tma" or "direct" (got %s)'):format(util.describe(epilogue)))
  end
  local out = o.out or "f32"
  if out ~= "f32" and out ~= "bf16" then sched.fail(('out must be "f32" or "bf16" (got %s)'):format(util.describe(out))) end
  local per = 16 / ref.OUT_BYTES[out]
  if epilogue == "tma" and o.n % per ~= 0 then
    sched.fail(('epilogue "tma" needs n a multiple of %d for out = "%s" (a TMA store writes whole 16-byte units of a row; n = %d): use epilogue = "direct"'):format(per, out, o.n))
  end
  if o.pdl ~= nil and type(o.pdl) ~= "boolean" then sched.fail(("pdl must be true or false (got %s)"):format(util.describe(o.pdl))) end
  local multicast = o.multicast
  if multicast == nil then multicast = cluster > 1 end
  if type(multicast) ~= "boolean" then util.fail("gemm", ("multicast must be true or false (got %s)"):format(util.describe(multicast))) end
  if multicast and cluster == 1 then util.fail("gemm", "multicast = true needs cluster = 2 (the A tile is shared by the cluster's blocks)") end
  local ablate = o.ablate or {}
  util.kind("gemm", "ablate", ablate, "table")
  util.known_fields("gemm", ablate, M.ABLATE, "ablate")
  local raster = util.int_in("gemm", "raster", o.raster or 1, 1, 64)
  local schedule = o.schedule or "cooperative"
  if schedule ~= "cooperative" and schedule ~= "pingpong" then
    util.fail("gemm", ('schedule must be "cooperative" or "pingpong" (got %s)'):format(util.describe(schedule)))
  end
  local store_buffers = o.store_buffers or 1
  if store_buffers ~= 1 and store_buffers ~= 2 then
    sched.fail(("store_buffers must be 1 or 2 (got %s)"):format(util.describe(store_buffers)))
  end
  if store_buffers == 2 and (epilogue ~= "tma" or schedule ~= "cooperative") then
    sched.fail(('store_buffers = 2 is the cooperative schedule\'s TMA epilogue (got epilogue = "%s", schedule = "%s")'):format(epilogue, schedule))
  end
  local l2 = o.l2_promotion or "none"
  local map = maps.loader(l2)
  local consumers = o.bm / 64
  if schedule == "cooperative" then fit_registers(o.bm, o.bn) end
  local S = sched.new(o, o.bm, o.bn, cluster, M.BK, raster)   -- before the maps: its refusals need no buffer
  local slices = multicast and cluster or 1
  local P
  if schedule == "pingpong" then   -- its own plan (kernels/gemm_pingpong.lua), from the options checked above
    if S.kind ~= "persistent" or out ~= "f32" or o.pdl then
      sched.fail(('schedule "pingpong" is built for whole tiles (scheduler = "persistent"), f32 out and pdl off (got scheduler = "%s", out = "%s", pdl = %s)'):format(
        S.kind, out, tostring(o.pdl == true)))
    end
    P = pingpong.plan(setmetatable({ epilogue = epilogue, multicast = multicast, ablate = ablate, release = o.release or M.RELEASE },
      { __index = o }), map, M.CHUNK_COLS)
  else
    P = pipeline.new{ name = "gemm", stages = o.stages,
      loads = { { map = map(o.a, o.m, o.k, o.bm / slices), name = "a" }, { map = map(o.b, o.n, o.k, o.bn), name = "b" } },
      multicast = multicast and { a = "x" } or nil, cluster = cluster > 1 and { cluster, 1, 1 } or nil,
      producer = { warps = 4 }, consumer = { warps = 4 * consumers }, release = o.release or M.RELEASE,
      scratch = epilogue == "tma" and store_buffers * consumers * 64 * M.CHUNK_COLS * ref.OUT_BYTES[out] or nil }
  end
  P.bm, P.bn, P.cluster_blocks, P.epilogue, P.m, P.n, P.k = o.bm, o.bn, cluster, epilogue, o.m, o.n, o.k
  P.multicast, P.ablate, P.raster, P.sched, P.out, P.pdl = multicast, ablate, raster, S, out, o.pdl == true
  P.schedule, P.store_buffers, P.l2_promotion = schedule, store_buffers, l2
  return P
end

-- A gemm.plan from a plan or from gemm.plan's options.
local function plan_of(o)
  util.kind("gemm", "argument", o, "table")
  if getmetatable(o) == pipeline.Pipeline then return o end
  return M.plan(o)
end

-- gemm.program(P | plan options[, program fields]): the plan's program (not compiled); the
-- fields may add arch, watchdog, ..., never the defines.
function M.program(P, opts)
  P = plan_of(P)
  local spec = {}
  for k, v in pairs(opts or {}) do spec[k] = v end
  spec.file = P.kernel_file or "gemm_tma.cu"
  spec.defines = { BM = P.bm, BN = P.bn, CLUSTER = P.cluster_blocks, EPILOGUE = P.epilogue == "tma" and 1 or 0,
                   MULTICAST = P.multicast and 1 or 0, BK = M.BK, CHUNK_COLS = M.CHUNK_COLS,
                   OUT_BF16 = P.out == "bf16" and 1 or 0, PDL = P.pdl and 1 or 0, STORE_BUFFERS = P.store_buffers or 1 }
  if P.schedule == "pingpong" then spec.defines.RASTER = P.raster end   -- gemm_pingpong.cu walks its own tiles
  for k, v in pairs(P.sched:defines()) do spec.defines[k] = v end
  local headers = {}
  for k, v in pairs(spec.headers or {}) do headers[k] = v end
  for k, v in pairs(P.sched:headers()) do headers[k] = v end
  spec.headers = headers
  for k, v in pairs(P.ablate or {}) do
    if v then spec.defines[M.ABLATE[k]] = 1 end
  end
  return P:program(spec)
end

M.SIGNATURE = "tensormap, tensormap, tensormap, ptr, ptr, ptr, u32, u32, u32, u32"   -- A, B, C's map, C, work, flags, m, n, k, epoch
-- gemm.kernel(P[, program fields]): compiled; the fields as gemm.program's (watchdog = false, ...).
function M.kernel(P, fields)
  P = plan_of(P)
  return M.program(P, fields):compile():kernel(P.kernel_entry or "gemm_tma", M.SIGNATURE)
end

M.c_map = maps.c_map   -- gemm.c_map(P, c): the map C leaves through (kernels/gemm_maps.lua)

M.workspace = sched.workspace   -- gemm.workspace(P[, stream]) -> work, flags

-- The kernel's arguments for plan P writing c, with the turnstile's work and flags (gemm.workspace),
-- and the next epoch: one call per launch.
function M.args(P, c, work, flags)
  return P.loads[1].map, P.loads[2].map, M.c_map(P, c), c, work, flags, P.m, P.n, P.k, sched.epoch(P)
end

-- A persistent grid: at most one block per SM, at most one per unit of the scheduler (a
-- cluster's pair of tiles); with clusters, at most as many as can be co-resident
-- (kernel:max_active_clusters): a persistent grid larger than that would run a second wave. m and
-- n are the plan's (kept for the callers that pass them).
function M.launch_config(P, dev, m, n, kernel)
  if (m and m ~= P.m) or (n and n ~= P.n) then
    util.fail("gemm", ("launch_config's m x n = %s x %s is not the plan's %d x %d (the scheduler's walk is the plan's)"):format(
      tostring(m), tostring(n), P.m, P.n))
  end
  return sched.launch_config(P, dev, kernel)
end

-- The limits a plan is pruned with: the open device's, else sm_90's (launch_rules.limits_of).
function M.limits()
  return rules.limits_of(device.peek())
end

-- The wgmma shared-memory matrix descriptor as kernels-src/cuasync/wgmma.cuh encodes it (the
-- specs check one against the other): start >> 4 in bits 0-13, leading-dimension offset >> 4 in
-- 16-29, stride-dimension offset >> 4 in 32-45, swizzle in 62-63 (0 none, 1 128B, 2 64B, 3 32B).
-- Returns the high and low 32-bit halves.
M.SWIZZLE_CODE = swizzle.WGMMA
function M.descriptor(address, lbo, sbo, swizzle)
  local code = M.SWIZZLE_CODE[swizzle]
  if not code then util.fail("gemm.descriptor", ("swizzle must be none, 128B, 64B or 32B (got %s)"):format(util.describe(swizzle))) end
  local lo = bit.bor(bit.rshift(bit.band(address, 0x3FFFF), 4), bit.lshift(bit.rshift(bit.band(lbo, 0x3FFFF), 4), 16))
  local hi = bit.bor(bit.rshift(bit.band(sbo, 0x3FFFF), 4), bit.lshift(code, 30))
  return hi % 2 ^ 32, lo % 2 ^ 32
end

-- gemm.build(plan options (and watchdog = false | {...}), { a = buf, b = buf, c = buf[, ref = buf] }) -> { run, verify,
-- poison, flops }: the driver shape a sweep's build returns. The options name m, n, k and the
-- tile (bm, bn or tile = "BMxBN"), stages, cluster, epilogue, scheduler, out, pdl; the plan's maps
-- are made on a, b; the turnstile's workspace and flags are allocated here, and each run() takes
-- the next epoch. verify() compares c with the reference GEMM (gemm.TOLERANCE[out]: |got - want|
-- <= 1e-2 + 1e-3 |want|, plus bf16's rounding): ref when given (it must already hold
-- gemm.reference of a and b), else one computed on first use. pdl = true: every launch goes with
-- programmatic = true, so that back-to-back runs overlap.
function M.build(opts, b)
  util.kind("gemm", "buffers", b, "table")
  util.known_fields("gemm", b, { a = true, b = true, c = true, ref = true, stream = true }, "buffers")
  local q = {}
  for k, v in pairs(util.kind("gemm", "argument", opts, "table")) do q[k] = v end
  if getmetatable(opts) == pipeline.Pipeline then util.fail("gemm", "build takes the plan's options (it makes the maps on the buffers), not a plan") end
  q.a, q.b = b.a, b.b
  local P = plan_of(q)
  local m, n, k = q.m, q.n, q.k
  local kern = M.kernel(P, { watchdog = q.watchdog, trace = q.trace })
  local cfg = M.launch_config(P, device.current(), m, n, kern)
  cfg.stream, cfg.programmatic = b.stream, P.pdl or nil
  local work, flags = M.workspace(P, b.stream)
  local prepared = kern:prepare(cfg, M.args(P, b.c, work, flags))
  -- the closures hold work and flags (upvalues): the prepared launch keeps only their addresses
  local run = function() local _ = work and flags; return prepared() end
  if P.sched.turnstile then   -- a new epoch each launch (docs/schedulers.md): the arguments packed again
    local ma, mb, mc = P.loads[1].map, P.loads[2].map, M.c_map(P, b.c)
    run = function() return prepared(ma, mb, mc, b.c, work, flags, m, n, k, P.sched:next_epoch()) end
  end
  local r
  local tol = M.TOLERANCE[P.out]
  local function verify()
    if not r then
      r = b.ref
      if not r then
        r = buffer.alloc(m * n * 4)
        M.reference(b.a, b.b, r, m, n, k)
      end
    end
    local bad, worst = M.compare(b.c, r, m * n, tol.atol, tol.rtol, P.out)
    if bad == 0 then return true end
    return false, ("%d of %d elements off the reference (largest difference %.3g)"):format(bad, m * n, worst)
  end
  -- bytes in flight per SM (a sweep's knee): every stage of every resident block (the grid is
  -- persistent, at most one block per SM); stage_inflight: one stage of each
  local grid = type(cfg.grid) == "table" and cfg.grid[1] or cfg.grid
  local per_sm = math.ceil(grid / device.current().sms)
  return { run = run, verify = verify, poison = function() b.c:poison(b.stream) end, flops = 2 * m * n * k, dtype = "bf16", plan = P, kernel = kern,
           config = cfg, inflight = P.tx_bytes * P.stages * per_sm, stage_inflight = P.tx_bytes * per_sm,
           workspace = { work = work, flags = flags } }
end

M.helpers, M.random, M.reference, M.compare, M.cublas = ref.helpers, ref.random, ref.reference, ref.compare, ref.cublas

return M
