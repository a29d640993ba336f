-- gemm_sweep.lua: the flagship. A Hopper GEMM mainloop (kernels-src/gemm_tma.cu: TMA loads of A and
-- B tiles with the 128B swizzle, wgmma from shared memory, warp-specialized on a cuasync.pipeline
-- plan, its tiles walked by a cuasync.scheduler, C out through TMA stores) swept over stages x tile
-- x cluster (2: the A tile multicast to both blocks of a cluster) x raster (tiles in bands of that
-- many tile rows) x epilogue (TMA stores, or direct stores that leave the scratch to stages) x
-- schedule (cooperative: gemm_tma.cu; pingpong: gemm_pingpong.cu, two consumer warpgroups on
-- alternate tiles) x scheduler (persistent; stream_k; split_k with each of --splits, serial turnstile) x pdl (the
-- timed launches programmatic, so back-to-back GEMMs overlap), for each output type (one sweep
-- each, with cuBLAS writing the same type as its yardstick). Pruned by the plans' own checks
-- (shared memory, a scheduler the shape cannot serve) and one rule of the sweep's (split-K only
-- where the tiles leave SMs idle), every variant verified against a reference GEMM
-- (kernels-src/gemm_ref.cu, itself checked against a CPU GEMM by spec/kernels/gemm_spec.lua), timed
-- beside cuBLAS on the same inputs in interleaved rounds.
-- C = A * B^T: A m x k, B n x k (bf16), C m x n (f32 or bf16). TFLOP/s counts 2 m n k.
--   luajit examples/gemm_sweep.lua [--m 8192] [--n 8192] [--k 8192] [--stages 2,3,4] [--tiles 128x128,128x192,128x256]
--     [--clusters 1,2] [--raster 1,16] [--epilogue tma,direct] [--store-buffers 1,2] [--schedulers persistent,stream_k,split_k]
--     [--splits 2,4] [--out-types f32,bf16] [--pdl off,on] [--schedules cooperative,pingpong] [--release warpgroup] [--out build]
--   luajit examples/gemm_sweep.lua --family [--shapes 128x8192x8192,...] [--timeline] [axes as above]: every shape of
--     FAMILY (or those given), one table of the best of each (--timeline: and where each best variant's time goes)
--   luajit bin/cuasync sweep examples/gemm_sweep.lua [the same, one shape] [--param stages=4,5] [--out build] ...
package.path = (debug.getinfo(1, "S").source:match("^@(.*)/") or ".") .. "/lib/?.lua;" .. package.path
require("example.checkout")   -- examples/lib/: this checkout's lua/ and build/ first on the paths
local cuasync = require("cuasync")
local gemm = require("cuasync.kernels.gemm")
local cli = require("cuasync.tools.cli")
local command = require("cuasync.tools.commands.sweep")
local gemm_data = require("example.gemm")

-- The family (issue 38): square, an LLM MLP, short K, and two skinny shapes whose 128 x 128 tiles
-- (64 and 128 of them) leave SMs idle.
local FAMILY = { { 8192, 8192, 8192 }, { 4096, 4096, 4096 }, { 4096, 14336, 4096 }, { 8192, 8192, 1024 },
                 { 256, 8192, 8192 }, { 128, 8192, 8192 } }
-- The family's axes where none is given (the others are the options' defaults): the stages and
-- raster that led at 8192^3 (docs/sweeps.md) and their neighbours, a 64-row tile for the shapes
-- whose 128-row tiles leave SMs idle (pruned elsewhere by rule), pdl both ways.
local FAMILY_AXES = { stages = { 3, 4, 6 }, pdl = { "off", "on" }, raster = { 16 },
                      tiles = { "64x128", "128x128", "128x256", "256x128" } }

local o = cli.script{ sweep = true, options = {
  { "--m N", "rows of A and C", default = 8192 }, { "--n N", "rows of B, columns of C", default = 8192 },
  { "--k N", "the inner dimension", default = 8192 },
  { "--stages LIST", "stages of the pipeline (default 2,3,4,5,6,7; --family: 3,4,6)", type = "ints" },
  { "--tiles LIST", "C tiles, MxN (default 128x128,128x256,256x128; --family: 64x128 too; 128x192 on request)", type = "list" },
  { "--clusters LIST", "cluster sizes (2: the A tile multicast to both blocks)", default = { 1, 2 } },
  { "--raster LIST", "tile rows per band of the tile order (default 1,16; --family: 16)", type = "ints" },
  { "--epilogue LIST", "tma, direct", default = { "tma" } },
  { "--store-buffers LIST", "the TMA epilogue's chunk buffers a warpgroup: 1, 2 (2: a chunk written while the last one's store reads)", type = "ints", default = { 1, 2 } },
  { "--schedules LIST", "cooperative, pingpong (pingpong: tiles 128x128, 64x256, ...; cluster 1)", default = { "cooperative", "pingpong" } },
  { "--schedulers LIST", "persistent, stream_k, split_k", default = { "persistent", "stream_k", "split_k" } },
  { "--splits LIST", "split_k's k-ranges per tile", default = { 2, 4 } },
  { "--out-types LIST", "C's type: f32, bf16 (a sweep each, cuBLAS writing the same)", default = { "f32" } },
  { "--watchdog LIST", "on, off: the kernel's hang watchdog (on: the plans' default; off: a known-good kernel's timing)", default = { "on" } },
  { "--l2 LIST", "A's and B's L2 promotion: none, 64B, 128B, 256B (gemm.plan's l2_promotion)", default = { "none" } },
  { "--pdl LIST", "off, on: timed launches programmatic (default off; --family: off,on)", type = "list" },
  { "--sms N", "the SM count the schedulers plan for (an H100 SXM's or H200's)", default = 132 },
  { "--release WHO", "who releases a consumed stage to the cluster (default: the plan's)", choices = { "warp", "warpgroup" } },
  { "--rounds N", "interleaved rounds", default = 5 }, { "--reps N", "launches timed per round", default = 10 },
  "on its own (through cuasync sweep, the command's --out serves):",
  { "--family", "sweep every shape of the family and print one table of the best of each", alone = true },
  { "--timeline", "with --family: each shape's best variant traced (every block) after its sweep: where its time goes", alone = true },
  { "--shapes LIST", "with --family: these shapes (MxNxK, e.g. 128x8192x8192) instead of the family's", type = "list", alone = true },
  { "--out DIR", "write NAME.csv, .json, .t4.json and two plots to DIR (made if missing)", alone = true },
} }

-- The axes without a default of their own: the family's, else the single shape's.
o.stages = o.stages or (o.family and FAMILY_AXES.stages or { 2, 3, 4, 5, 6, 7 })
o.pdl = o.pdl or (o.family and FAMILY_AXES.pdl or { "off" })
o.tiles = o.tiles or (o.family and FAMILY_AXES.tiles or { "128x128", "128x256", "256x128" })
o.raster = o.raster or (o.family and FAMILY_AXES.raster or { 1, 16 })

-- The scheduler axis: "persistent", "stream_k", "split_k:n" for each n of --splits.
local scheds = {}
for _, s in ipairs(o.schedulers) do
  if s == "split_k" then
    for _, n in ipairs(o.splits) do scheds[#scheds + 1] = "split_k:" .. n end
  else
    scheds[#scheds + 1] = s
  end
end
if (o.timeline or o.shapes) and not o.family then cli.fail("--timeline and --shapes go with --family") end
for _, v in ipairs(o.l2) do
  if not gemm.L2_PROMOTIONS[v] then cli.fail(("--l2 takes none, 64B, 128B and 256B (got %s)"):format(tostring(v))) end
end
for _, flag in ipairs({ "pdl", "watchdog" }) do
  for _, p in ipairs(o[flag]) do
    if p ~= "off" and p ~= "on" then cli.fail(("--%s takes off and on (got %s)"):format(flag, tostring(p))) end
  end
end

-- The SM count the schedulers plan for: given, the same in the compile workers (which open no
-- device) as here.
local SMS = o.sms

local function opts(p, m, n, k, out)
  local kind, splits = p.sched:match("^(split_k):(%d+)$")
  return { stages = p.stages, tile = p.tile, m = m, n = n, k = k, cluster = p.cluster, epilogue = p.epilogue, raster = p.raster,
           release = o.release, scheduler = kind or p.sched, splits = tonumber(splits), out = out, pdl = p.pdl == "on", sms = SMS,
           schedule = p.schedule, store_buffers = p.buffers, l2_promotion = p.l2, watchdog = p.watchdog == "on" }
end

-- The sweep of one shape and output type; data() gives its inputs (made on first use).
local function sweep(m, n, k, out, axes, data)
  local sms = SMS
  return cuasync.sweep{
    name = ("gemm_%dx%dx%d%s"):format(m, n, k, out == "f32" and "" or "_" .. out),
    params = { stages = axes.stages, tile = axes.tiles, cluster = axes.clusters, raster = axes.raster, epilogue = o.epilogue,
               sched = scheds, pdl = axes.pdl, schedule = o.schedules, buffers = o.store_buffers, l2 = o.l2, watchdog = o.watchdog },
    order = { "schedule", "sched", "cluster", "tile", "epilogue", "buffers", "l2", "watchdog", "raster", "pdl", "stages" },
    unit = "TFLOP/s", rounds = o.rounds, reps = o.reps,
    -- the sweep's own rules, from the shape: a raster whose order a smaller listed one gives
    -- already (bands no taller than the tile rows), a tile twice as tall as the output, a 64-row
    -- tile where 128-row ones already fill the SMs, split-K where the tiles fill them
    where = function(p)
      local bm, bn = gemm.tile(p.tile)
      local tiles_m, tiles = math.ceil(m / bm), math.ceil(m / bm) * math.ceil(n / bn)
      for _, r in ipairs(axes.raster) do
        if r < p.raster and math.min(r, tiles_m) == math.min(p.raster, tiles_m) then
          return false, ("%d tile rows: raster %d is raster %d's order"):format(tiles_m, p.raster, r)
        end
      end
      if bm >= 2 * m then return false, ("the %s tile is twice as tall as m = %d: half its rows are zero fill"):format(p.tile, m) end
      if bm == 64 and math.ceil(m / 128) * math.ceil(n / bn) >= sms then
        return false, ("64-row tiles pay where 128-row ones leave SMs idle (%d tiles of 128x%d on %d SMs)"):format(
          math.ceil(m / 128) * math.ceil(n / bn), bn, sms)
      end
      if p.sched:match("^split_k") and tiles >= sms then
        return false, ("split-K pays where the tiles leave SMs idle (%d tiles of %s on %d SMs)"):format(tiles, p.tile, sms)
      end
      local ok, err = pcall(function() gemm.plan(opts(p, m, n, k, out)):check(gemm.limits()) end)
      return ok, err
    end,
    program = function(p) local q = opts(p, m, n, k, out) return gemm.program(q, { watchdog = q.watchdog }) end,
    build = function(p) local x = data() return gemm.build(opts(p, m, n, k, out), { a = x.a, b = x.b, c = x.c, ref = x.r }) end,
    baseline = { name = "cuBLAS", flops = 2 * m * n * k, run = function() local x = data() gemm.cublas(x.a, x.b, x.c, m, n, k, out) end },
  }
end

-- cuBLAS through the same gate as the variants (its output type's tolerance).
local function check_cublas(d, m, n, k, out)
  d.c:poison()
  gemm.cublas(d.a, d.b, d.c, m, n, k, out)
  cuasync.synchronize()
  local ok, why = d.verify(out)
  return ok and "verified" or why
end

local axes = { stages = o.stages, tiles = o.tiles, clusters = o.clusters, raster = o.raster, pdl = o.pdl }
if o.family then
  if not cuasync.sweep.main() then cli.fail("--family runs on its own: luajit examples/gemm_sweep.lua --family") end
  local shapes = FAMILY
  if o.shapes then
    shapes = {}
    for _, t in ipairs(o.shapes) do
      local sm, sn, sk = tostring(t):match("^(%d+)x(%d+)x(%d+)$")
      if not sm then cli.fail(("--shapes takes MxNxK entries, e.g. 128x8192x8192 (got %s)"):format(tostring(t))) end
      shapes[#shapes + 1] = { tonumber(sm), tonumber(sn), tonumber(sk) }
    end
  end
  -- the best variant again, traced in every block (--timeline)
  local function traced(p, m, n, k, out, x)
    local q = opts(p, m, n, k, out)
    q.trace = { blocks = "all", names = gemm.TRACE_NAMES }
    return gemm.build(q, { a = x.a, b = x.b, c = x.c, ref = x.r })
  end
  if require("example.gemm_family")(o, shapes, axes, sweep, check_cublas, traced) > 0 then os.exit(1) end
  return
end

local m, n, k = o.m, o.n, o.k
local out = o.out_types[1]
if #o.out_types > 1 and not cuasync.sweep.main() then
  cli.fail("--out-types with more than one type runs on its own (a sweep each): luajit examples/gemm_sweep.lua")
end
local d   -- the inputs, the reference result and the output, made on first use
local function data() d = d or gemm_data(m, n, k) return d end
local S = sweep(m, n, k, out, axes, data)

-- After the table and the files, both ways: the knee, cuBLAS through the same gate, the plots.
local function after(_, run)
  if S.best then   -- where extra stages stop paying, beside Little's law from the memory probe
    print(S:knee{ x = "stages", series = { "schedule", "cluster", "tile" }, memory = cuasync.probe.memory(cuasync.current_device()) }:text())
  end
  if d then print(("cuBLAS against the reference: %s"):format(check_cublas(d, m, n, k, out))) end
  if run.out and S.best then   -- a plot needs measured rows
    for _, f in ipairs({ { "", "tile" }, { "_cluster", "cluster" } }) do
      local ok, err, note = pcall(S.plot, S, run.out .. "/" .. S.name .. f[1] .. ".png", { x = "stages", y = "TFLOP/s", series = f[2] })
      print(ok and ("plot: " .. err .. (note and (": " .. note) or "")) or ("plot: not drawn (" .. tostring(err):gsub("^[^\n]-: ", "", 1) .. ")"))
    end
  end
end
if not cuasync.sweep.main() then return S, after end   -- `cuasync sweep` runs it, with its options
command.report(S:run(), o, after)
for i = 2, #o.out_types do   -- each further output type: a sweep of its own, its own cuBLAS
  local S2 = sweep(m, n, k, o.out_types[i], axes, data)
  command.report(S2:run(), o, function() if d then print(("cuBLAS (%s out): %s"):format(o.out_types[i], check_cublas(d, m, n, k, o.out_types[i]))) end end)
end
