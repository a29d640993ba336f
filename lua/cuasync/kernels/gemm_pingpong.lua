-- The ping-pong schedule of the GEMM (kernels-src/gemm_pingpong.cu): gemm.plan{ schedule =
-- "pingpong", ... } builds its plan here. One producer warpgroup (TMA loads of the A and B tiles);
-- two consumer warpgroups that take alternate output tiles of the block, each computing a whole
-- BM x BN tile (BM / 64 m64 wgmmas a k-step), ordered by the plan's ordered barrier ("math":
-- turn 0 the mainloop, turn 1 the epilogue) so that one warpgroup's MMAs run while the other
-- drains its accumulators; consume = "alternate": a stage is read (and released) by the group
-- whose tile it holds. The TMA epilogue's scratch: one 64 x 32 f32 chunk buffer per warpgroup.
-- Refused by rule before anything compiles: one consumer warpgroup (nobody to overlap with), a
-- cluster, BM other than 64 or 128, BN other than 64, 128 or 256 (192 is the cooperative
-- schedule's), and a tile whose accumulators (BM x BN / 128 registers a thread) leave a consumer
-- thread fewer than RESERVE of the registers setmaxnreg gives it.
local pipeline = require("cuasync.pipeline")
local util = require("cuasync.util")
local rules = require("cuasync.model.launch_rules")

local M = {}
M.FILE, M.ENTRY = "gemm_pingpong.cu", "gemm_pingpong"
M.TILES = { "128x128", "64x256", "128x64", "64x128" }   -- the tiles whose accumulators fit (M.registers)
M.GROUPS = 2            -- consumer warpgroups taking turns
M.PRODUCER_REGS = 40    -- the producer warpgroup's setmaxnreg.dec (gemm_pingpong.cu's PRODUCER_REGS)
-- Registers a consumer thread needs besides its accumulators: descriptors, addresses, the
-- pipeline's and the turns' states, the epilogue's indices. ptxas -v, 128x128: 168 registers at
-- launch (the cap), no spills; the highest its consumer code names is R164 with the TMA epilogue
-- and R225 with the direct one (its unrolled stores keep their addresses live), of 232.
M.RESERVE = 56

local function fail(msg) util.fail("gemm", msg) end

-- The registers of a block of `threads` with one producer warpgroup and `consumers` consumer
-- warpgroups, as gemm_pingpong.cu derives them: what __launch_bounds__(threads, 1) gives every
-- thread (65536 / threads down to a multiple of 8, at most 248), the producer's, and what each
-- consumer thread may raise to with what the producer released (at most 232, a multiple of 8).
function M.registers(threads, consumers)
  local base = rules.launch_bound_registers(threads)
  local raised = base + math.floor(128 * (base - M.PRODUCER_REGS) / (128 * consumers))
  return { base = base, producer = M.PRODUCER_REGS, consumer = math.floor(math.min(232, raised) / 8) * 8 }
end

-- The tile's accumulators against a consumer thread's registers: nil when they fit, else why.
function M.register_refusal(bm, bn, consumers)
  local r = M.registers(128 * (1 + consumers), consumers)
  local acc = bm * bn / 128
  if acc + M.RESERVE <= r.consumer then return nil end
  return ('schedule "pingpong" with tile %dx%d: a consumer warpgroup holds the whole tile, %d accumulator registers a thread (BM x BN / 128), and with the %d it needs beside them (gemm_pingpong.RESERVE) that is more than the %d setmaxnreg gives a consumer thread of a %d-thread block; use a tile with BM x BN / 128 + %d <= %d (128x128, 64x256 fit) or schedule = "cooperative"'):format(
    bm, bn, acc, M.RESERVE, r.consumer, 128 * (1 + consumers), M.RESERVE, r.consumer)
end

-- The plan: o holds gemm.plan's checked options (bm, bn, m, n, k, a, b, stages, epilogue,
-- release, cluster, multicast, ablate, consumers); map(buf, rows, k, box_rows) makes a load's
-- tensor map; chunk_cols the epilogue's chunk width.
function M.plan(o, map, chunk_cols)
  local consumers = o.consumers == nil and M.GROUPS or o.consumers
  if consumers == 1 then
    fail('schedule "pingpong" needs 2 consumer warpgroups taking turns (consumers = 1 leaves no warpgroup to run its MMAs while the other drains its epilogue): use schedule = "cooperative"')
  end
  if consumers ~= M.GROUPS then
    fail(('schedule "pingpong" takes consumers = 2 (two warpgroups taking turns; got %s)'):format(util.describe(consumers)))
  end
  if (o.cluster or 1) ~= 1 or o.multicast then
    fail(('schedule "pingpong" runs without clusters (cluster = 1, no multicast; got cluster = %s)'):format(util.describe(o.cluster)))
  end
  if next(o.ablate or {}) then
    fail('ablate is for schedule = "cooperative" (gemm_tma.cu\'s switches); schedule "pingpong" has none')
  end
  if o.bm ~= 64 and o.bm ~= 128 then
    fail(('schedule "pingpong" needs BM 64 or 128 (one warpgroup computes the whole tile, BM / 64 m64 wgmmas a k-step; got %s)'):format(
      util.describe(o.bm)))
  end
  if o.bn ~= 64 and o.bn ~= 128 and o.bn ~= 256 then   -- gemm_pingpong.cu's tiles (BN 192 is the cooperative schedule's)
    fail(('schedule "pingpong" needs BN 64, 128 or 256 (gemm_pingpong.cu is built for those; got %s): BN = 192 is schedule = "cooperative"\'s'):format(
      util.describe(o.bn)))
  end
  local why = M.register_refusal(o.bm, o.bn, consumers)
  if why then fail(why) end
  local P = pipeline.new{ name = "gemm_pingpong", stages = o.stages,
    loads = { { map = map(o.a, o.m, o.k, o.bm), name = "a" }, { map = map(o.b, o.n, o.k, o.bn), name = "b" } },
    producer = { warps = 4 }, consumer = { warps = 4 * consumers }, release = o.release,
    order = { name = "math", groups = consumers, depth = 2, consume = "alternate" },
    scratch = o.epilogue == "tma" and consumers * 64 * chunk_cols * 4 or nil }
  P.kernel_file, P.kernel_entry = M.FILE, M.ENTRY
  return P
end

return M
