-- gemm_ablation.lua: why a cluster-2 multicast GEMM is slower or faster than cluster 1, one factor
-- at a time. A cuasync.sweep over rungs x tiles at one shape, every rung verified against the
-- reference and timed beside cuBLAS in interleaved rounds; then a per-block trace of chosen rungs
-- (which SMs, when each block started and ended, how many tiles it took).
--   rungs: c1            cluster 1 (the baseline)
--          c2_own        cluster 2, no multicast: each block loads its whole A (the cluster's
--                        scheduling and co-residency alone)
--          c2_serial     multicast; lane 0 of each consumer warp arrives on both blocks in turn
--                        (the release before the release forms)
--          c2_warp       multicast; release = "warp": lane k of each warp arrives on block k
--          c2_wg         multicast; release = "warpgroup": one arrival per warpgroup per block
--          c2_wg_leader  c2_wg, rank 0 issues both slices of A
--          *_cl          the remote arrive's release at cluster scope (pipeline.cuh's form
--                        before the ablation; the default is CTA scope, CUTLASS's form)
--          *_nowd        the same without the watchdog
--          c1_prefetch   c1 with A's and B's maps prefetched by the producer before its first copy
--          c1_plain_c    c1 with the epilogue's chunks staged unswizzled (8 rows a store on the
--                        same banks: the layout before docs/schedulers.md's "epilogue's swizzle")
--   luajit examples/gemm_ablation.lua [--m 8192] [--n 8192] [--k 8192] [--stages 4]
--                                     [--tiles 128x256,256x128] [--rungs c1,c2_own,...] [--trace c1,c2_wg]
--   luajit bin/cuasync sweep examples/gemm_ablation.lua [the same] [--param rung=c1,c2_wg] ...
package.path = (debug.getinfo(1, "S").source:match("^@(.*)/") or ".") .. "/lib/?.lua;" .. package.path
require("example.checkout")   -- examples/lib/: this checkout's lua/ and build/ first on the paths
local cuasync = require("cuasync")
local gemm = require("cuasync.kernels.gemm")
local cli = require("cuasync.tools.cli")
local gemm_data = require("example.gemm")

local RUNGS = {
  c1 = { cluster = 1 },
  c2_own = { cluster = 2, multicast = false },
  c2_serial = { cluster = 2, release = "warp", ablate = { serial_release = true } },
  c2_warp = { cluster = 2, release = "warp" },
  c2_wg = { cluster = 2, release = "warpgroup" },
  c2_wg_leader = { cluster = 2, release = "warpgroup", ablate = { a_leader = true } },
  c1_plain_c = { cluster = 1, ablate = { plain_c = true } },
  c1_prefetch = { cluster = 1, ablate = { prefetch_maps = true } },
}
for _, name in ipairs({ "c2_serial", "c2_warp", "c2_wg" }) do
  local r = {}
  for k, v in pairs(RUNGS[name]) do r[k] = v end
  r.ablate = { serial_release = name == "c2_serial" or nil, release_cluster = true }
  RUNGS[name .. "_cl"] = r
end
for _, name in ipairs({ "c1", "c2_own", "c2_serial", "c2_warp", "c2_wg", "c2_wg_leader", "c2_serial_cl", "c2_warp_cl", "c2_wg_cl" }) do
  local r = {}
  for k, v in pairs(RUNGS[name]) do r[k] = v end
  r.watchdog = false
  RUNGS[name .. "_nowd"] = r
end

local o = cli.script{ sweep = true, options = {
  { "--m N", "rows of A and C", default = 8192 }, { "--n N", "rows of B, columns of C", default = 8192 },
  { "--k N", "the inner dimension", default = 8192 },
  { "--stages N", "stages of the pipeline", default = 4 },
  { "--raster N", "tile rows per band of the tile order", default = 1 },
  { "--tiles LIST", "C tiles, MxN", default = { "128x256", "256x128" } },
  { "--rungs LIST", "the rungs (this file's first lines name them)", default = { "c1", "c2_own", "c2_serial_cl", "c2_warp_cl",
    "c2_wg_cl", "c2_serial", "c2_warp", "c2_wg", "c2_wg_leader", "c1_nowd", "c2_own_nowd", "c2_wg_nowd" } },
  { "--trace LIST", "the rungs traced after the table", default = { "c1", "c2_own", "c2_wg" } },
  { "--rounds N", "interleaved rounds", default = 5 }, { "--reps N", "launches timed per round", default = 10 },
} }
local m, n, k = o.m, o.n, o.k
local rungs, tiles = o.rungs, o.tiles
for _, r in ipairs(rungs) do
  if not RUNGS[r] then error(("unknown rung '%s'"):format(r), 0) end
end

local d
local function data() d = d or gemm_data(m, n, k) return d end
local function opts(p, extra)
  local q = { stages = o.stages, tile = p.tile, m = m, n = n, k = k, epilogue = "tma", raster = o.raster }
  for key, v in pairs(RUNGS[p.rung]) do q[key] = v end
  if extra then
    local a = {}
    for key, v in pairs(q.ablate or {}) do a[key] = v end
    for key, v in pairs(extra) do a[key] = v end
    q.ablate = a
  end
  return q
end

local grids = {}
local S = cuasync.sweep{
  name = ("gemm_ablation_%dx%dx%d"):format(m, n, k), params = { rung = rungs, tile = tiles }, order = { "tile", "rung" },
  unit = "TFLOP/s", rounds = o.rounds, reps = o.reps,
  where = function(p) local ok, err = pcall(function() gemm.plan(opts(p)):check(gemm.limits()) end) return ok, err end,
  program = function(p) local q = opts(p) return gemm.program(q, { watchdog = q.watchdog }) end,
  build = function(p)
    local x = data()
    local v = gemm.build(opts(p), { a = x.a, b = x.b, c = x.c, ref = x.r })
    grids[p.rung .. " " .. p.tile] = v.config.grid
    return v
  end,
  baseline = { name = "cuBLAS", flops = 2 * m * n * k, run = function() local x = data() gemm.cublas(x.a, x.b, x.c, m, n, k) end },
}
-- After the table, both ways: the grid of each rung, then the traces (over the sweep's tiles:
-- --param tile=... changes them too).
local function after()
  if not d then return end
  for _, r in ipairs(S.params.rung) do
    for _, t in ipairs(S.params.tile) do
      local g = grids[r .. " " .. t]
      if g then print(("grid %-16s %s: %s blocks"):format(r, t, tostring(type(g) == "table" and g[1] or g))) end
    end
  end

  -- The trace: one launch of each chosen rung compiled with TRACE, its blocks' SMs and times.
  for _, r in ipairs(o.trace) do
    if RUNGS[r] then
      for _, t in ipairs(S.params.tile) do
        local x = data()
        local v = gemm.build(opts({ rung = r, tile = t }, { trace = true }), { a = x.a, b = x.b, c = x.c, ref = x.r })
        v.poison(); v.run(); cuasync.synchronize()
        local ok, why = v.verify()
        local blocks = type(v.config.grid) == "table" and v.config.grid[1] or v.config.grid
        local tr = v.kernel.module:global("gemm_trace"):download("uint64_t", 4 * blocks)
        local t0, t1, sms, durs, tiles_of, starts = math.huge, 0, {}, {}, {}, {}
        for i = 0, blocks - 1 do
          local s, e = tonumber(tr[4 * i + 1]), tonumber(tr[4 * i + 2])
          t0, t1 = math.min(t0, s), math.max(t1, e)
          sms[tonumber(tr[4 * i] % 65536)] = true
          durs[#durs + 1] = (e - s) / 1e3
          starts[#starts + 1] = s
          tiles_of[#tiles_of + 1] = tonumber(tr[4 * i + 3])
        end
        table.sort(durs); table.sort(tiles_of); table.sort(starts)
        local nsm = 0
        for _ in pairs(sms) do nsm = nsm + 1 end
        print(("trace %-14s %s: %s; %d blocks on %d SMs; kernel span %.1f us; block time min %.1f median %.1f max %.1f us; start spread %.1f us; tiles per block %d..%d"):format(
          r, t, ok and "verified" or why, blocks, nsm, (t1 - t0) / 1e3, durs[1], durs[math.ceil(#durs / 2)], durs[#durs],
          (starts[#starts] - starts[1]) / 1e3, tiles_of[1], tiles_of[#tiles_of]))
      end
    end
  end
end
if not cuasync.sweep.main() then return S, after end   -- `cuasync sweep` runs it, with its options
S:run():print()
after()
