-- Drivers of the project's GEMM kernels: kernels-src/gemm_tma.cu (TMA + wgmma on a
-- cuasync.pipeline plan) and kernels-src/gemm_ref.cu (a simple correct reference, random bf16 data
-- and a device-side comparison). C = A * B^T with A: M x K, B: N x K bf16 row-major, C: M x N f32.
--   local P = gemm.plan{ stages = 4, bm = 128, bn = 128, m = M, n = N, k = K, a = bufA, b = bufB,
--                        cluster = 1 | 2, epilogue = "tma" | "direct" }
--   local k = gemm.kernel(P)          -- compiled for the plan (BM, BN, CLUSTER, EPILOGUE as defines)
--   k:launch(gemm.launch_config(P, dev, m, n), P.loads[1].map, P.loads[2].map, gemm.c_map(P, C), C, m, n, k)
-- cluster = 2: the two blocks of a cluster share the A tile (each loads half, multicast);
-- epilogue = "tma": C leaves through TMA stores of 64 x 32 chunks staged in the plan's scratch
-- (n a multiple of 4: a store map's rows are whole 16-byte units); "direct": plain stores.
local ffi = require("ffi")
local bit = require("bit")
local pipeline = require("cuasync.pipeline")
local program = require("cuasync.program")
local tensormap = require("cuasync.tensormap")
local rules = require("cuasync.model.launch_rules")
local device = require("cuasync.device")
local native = require("cuasync.native")
local buffer = require("cuasync.buffer")
local util = require("cuasync.util")
local swizzle = require("cuasync.model.swizzle")
local pingpong = require("cuasync.kernels.gemm_pingpong")
require("cuasync.cdef.blas")

local M = {}
M.BK = 64
M.TILES = { "128x128", "128x256", "256x128" }

function M.tile(name)
  local bm, bn = tostring(name):match("^(%d+)x(%d+)$")
  bm, bn = tonumber(bm), tonumber(bn)
  if not bm or bm % 64 ~= 0 or bm < 64 or bm > 256 or not (bn == 64 or bn == 128 or bn == 256) then
    util.fail("gemm", ('tile must be "BMxBN" with BM 64..256 in steps of 64 and BN 64, 128 or 256 (got %s)'):format(util.describe(name)))
  end
  return bm, bn
end

-- The A or B tensor map: rows x K bf16, boxes of 64 (K) x box_rows, the 128B swizzle. Without a
-- buffer, a plan-only map (no driver needed: plans, pruning and compiles).
local function map(buf, rows, k, box_rows)
  if k % 8 ~= 0 then util.fail("gemm", ("k = %d must be a multiple of 8 (a row of A and B is then 16-byte aligned)"):format(k)) end
  return tensormap.new{ buffer = buf, ptr = not buf and 256 or nil, bytes = not buf and rows * k * 2 or nil,
    encode = buf ~= nil, dtype = "bf16", dims = { k, rows }, box = { M.BK, box_rows }, swizzle = "128B", load_only = true }
end

M.CHUNK_COLS = 32   -- the TMA epilogue's 64 x 32 f32 chunks (kernels-src/gemm_tma.cu)
M.TRACE_NAMES = { [1] = "epilogue" }   -- gemm_tma.cu's trace ranges: trace = { names = gemm.TRACE_NAMES }
-- The consumers' release form unless a plan names one: one arrival per consumer warpgroup per
-- block (valid here: a warpgroup is done with a stage when its wgmma.wait_group returns). On the
-- H200 it and "warp" measured within each other's noise (examples/gemm_ablation.lua); the best
-- cluster-2 point of the flagship sweep came with it, and it sends 4x fewer remote arrivals.
M.RELEASE = "warpgroup"

-- gemm.plan{ stages, bm, bn | tile = "BMxBN", m, n, k[, a, b, cluster, epilogue, release, multicast,
-- ablate] }: the pipeline: loads A (in `cluster` multicast slices) and B tiles; one producer
-- warpgroup; bm / 64 consumer warpgroups; the TMA epilogue's scratch.
--   release: the pipeline's release form ("warpgroup" | "warp"; see cuasync.pipeline).
--   multicast = false with cluster = 2: each block loads its whole A tile (no multicast): the
--     cluster's scheduling without the sharing, a rung of the ablation.
--   raster = g: output tiles taken in bands of g tile rows (along M), column by column inside a
--     band, so that a wave's A and B panels stay in L2; 1 (default): row by row.
--   ablate = { serial_release, release_cluster, a_leader, trace }: compile-time switches measured
--     by examples/gemm_ablation.lua (the release loop before the release forms; the remote
--     arrive's release at cluster scope; rank 0 issues every slice of A; a per-block trace).
--   schedule: "cooperative" (default: gemm_tma.cu, BM / 64 consumer warpgroups share a tile) or
--     "pingpong" (gemm_pingpong.cu: two consumer warpgroups on alternate tiles, taking turns;
--     kernels/gemm_pingpong.lua has its plan and refusals).
M.ABLATE = { serial_release = "SERIAL_RELEASE", release_cluster = "RELEASE_CLUSTER", a_leader = "A_LEADER",
             trace = "TRACE" }
function M.plan(o)
  util.kind("gemm", "argument", o, "table")
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
  if epilogue == "tma" and o.n % 4 ~= 0 then
    util.fail("gemm", ('epilogue "tma" needs n a multiple of 4 (a TMA store writes whole 16-byte units of a row; n = %d): use epilogue = "direct"'):format(o.n))
  end
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
  local consumers = o.bm / 64
  local slices = multicast and cluster or 1
  local P
  if schedule == "pingpong" then   -- its own plan (kernels/gemm_pingpong.lua), from the options checked above
    P = pingpong.plan(setmetatable({ epilogue = epilogue, multicast = multicast, ablate = ablate, release = o.release or M.RELEASE },
      { __index = o }), map, M.CHUNK_COLS)
  else
    P = pipeline.new{ name = "gemm", stages = o.stages,
      loads = { { map = map(o.a, o.m, o.k, o.bm / slices), name = "a" }, { map = map(o.b, o.n, o.k, o.bn), name = "b" } },
      multicast = multicast and { a = "x" } or nil, cluster = cluster > 1 and { cluster, 1, 1 } or nil,
      producer = { warps = 4 }, consumer = { warps = 4 * consumers }, release = o.release or M.RELEASE,
      scratch = epilogue == "tma" and consumers * 64 * M.CHUNK_COLS * 4 or nil }
  end
  P.bm, P.bn, P.cluster_blocks, P.epilogue, P.m, P.n = o.bm, o.bn, cluster, epilogue, o.m, o.n
  P.multicast, P.ablate, P.raster, P.schedule = multicast, ablate, raster, schedule
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
                   MULTICAST = P.multicast and 1 or 0, RASTER = P.raster or 1, BK = M.BK, CHUNK_COLS = M.CHUNK_COLS }
  for k, v in pairs(P.ablate or {}) do
    if v then spec.defines[M.ABLATE[k]] = 1 end
  end
  return P:program(spec)
end

-- gemm.kernel(P[, program fields]): compiled; the fields as gemm.program's (watchdog = false, ...).
function M.kernel(P, fields)
  P = plan_of(P)
  return M.program(P, fields):compile():kernel(P.kernel_entry or "gemm_tma", "tensormap, tensormap, tensormap, ptr, u32, u32, u32")
end

-- The map the TMA epilogue stores C through (m x n f32, boxes of 32 x 64); for the direct
-- epilogue, a 1D map of C only passed along (never stored through; any n).
function M.c_map(P, c)
  if P.epilogue ~= "tma" then
    return tensormap.new{ buffer = c, dtype = "f32", dims = { P.m * P.n }, box = { M.CHUNK_COLS }, load_only = true }
  end
  return tensormap.new{ buffer = c, dtype = "f32", dims = { P.n, P.m }, box = { M.CHUNK_COLS, 64 } }
end

-- A persistent grid: at most one block per SM, at most one per tile (a cluster's pair of tiles);
-- with clusters, at most as many as can be co-resident (kernel:max_active_clusters): a persistent
-- grid larger than that would run a second wave.
function M.launch_config(P, dev, m, n, kernel)
  local c = P.cluster_blocks or 1
  local units = math.ceil(m / P.bm) * math.ceil(math.ceil(n / P.bn) / c)
  local slots = math.floor(dev.sms / c)
  local cfg = P:check(dev):launch_config{ grid = c * math.min(slots, units) }
  if c > 1 and kernel then
    local active = kernel:max_active_clusters(cfg)
    if active < 1 then util.fail("gemm", ("no cluster of %d blocks of this plan can be resident"):format(c)) end
    cfg.grid = c * math.min(active, units)
  end
  return cfg
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
-- tile (bm, bn or tile = "BMxBN"), stages, cluster, epilogue; the plan's maps are made on a, b.
-- verify() compares c with the reference GEMM (|got - want| <= 1e-2 + 1e-3 |want|): ref when given
-- (it must already hold gemm.reference of a and b), else one computed on first use.
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
  cfg.stream = b.stream
  local run = kern:prepare(cfg, P.loads[1].map, P.loads[2].map, M.c_map(P, b.c),
                           b.c, m, n, k)
  local ref
  local function verify()
    if not ref then
      ref = b.ref
      if not ref then
        ref = buffer.alloc(m * n * 4)
        M.reference(b.a, b.b, ref, m, n, k)
      end
    end
    local bad, worst = M.compare(b.c, ref, m * n, 1e-2, 1e-3)
    if bad == 0 then return true end
    return false, ("%d of %d elements off the reference (largest difference %.3g)"):format(bad, m * n, worst)
  end
  -- bytes in flight per SM (a sweep's knee): every stage of every resident block (the grid is
  -- persistent, at most one block per SM); stage_inflight: one stage of each
  local grid = type(cfg.grid) == "table" and cfg.grid[1] or cfg.grid
  local per_sm = math.ceil(grid / device.current().sms)
  return { run = run, verify = verify, poison = function() b.c:poison(b.stream) end, flops = 2 * m * n * k, dtype = "bf16", plan = P, kernel = kern,
           config = cfg, inflight = P.tx_bytes * P.stages * per_sm, stage_inflight = P.tx_bytes * per_sm }
end

-- The helpers of kernels-src/gemm_ref.cu, compiled once.
local helpers
function M.helpers()
  if helpers then return helpers end
  local mod = program.new{ file = "gemm_ref.cu" }:compile()
  helpers = { ref = mod:kernel("gemm_ref", "ptr, ptr, ptr, u32, u32, u32"), fill = mod:kernel("fill_bf16", "ptr, u64, u32"),
              compare = mod:kernel("compare_f32", "ptr, ptr, u64, f32, f32, ptr"), out = buffer.alloc(8) }
  return helpers
end

-- Fresh random bf16 in [-1, 1) into buf (n elements) from seed.
function M.random(buf, n, seed)
  M.helpers().fill:launch({ grid = 1024, block = 256 }, buf, n, seed % 2 ^ 32)
end

function M.reference(a, b, c, m, n, k)
  M.helpers().ref:launch({ grid = { math.ceil(n / 32), math.ceil(m / 32) }, block = { 32, 32 } }, a, b, c, m, n, k)
end

-- The elements of got (n floats) outside atol + rtol * |want|, and the largest difference.
function M.compare(got, want, n, atol, rtol)
  local h = M.helpers()
  h.out:fill(0)
  h.compare:launch({ grid = 1024, block = 256 }, got, want, n, atol, rtol, h.out)
  local r = h.out:download("uint32_t", 2)
  return r[0], ffi.cast("float *", r + 1)[0]   -- word 1 holds the float's bits
end

-- cuBLAS on the same inputs (the yardstick): C = A * B^T, bf16 in, f32 accumulate and out.
function M.cublas(a, b, c, m, n, k)
  local where = "gemm.cublas"
  native.check_as(where, native.C.cuasync_blas_gemm_bf16_tn(buffer.memory(where, "a", a), buffer.memory(where, "b", b),
    buffer.memory(where, "c", c), m, n, k, native.errbuf, native.ERRLEN))
end

return M
