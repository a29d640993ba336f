-- gemm_sweep.lua: the flagship. A Hopper GEMM mainloop (kernels-src/gemm_tma.cu: TMA loads of A and
-- B tiles with the 128B swizzle, wgmma from shared memory, warp-specialized on a cuasync.pipeline
-- plan, C out through TMA stores) swept over stages x tile x cluster (2: the A tile multicast to
-- both blocks of a cluster) x raster (tiles in bands of that many tile rows) x epilogue (TMA
-- stores, or direct stores that leave the scratch to stages) x schedule (cooperative: gemm_tma.cu;
-- pingpong: gemm_pingpong.cu, two consumer warpgroups on alternate tiles), pruned by the plan's own check
-- (shared memory), every variant verified against a reference GEMM (kernels-src/gemm_ref.cu,
-- itself checked against a CPU GEMM by spec/kernels/gemm_spec.lua), timed beside cuBLAS on the same
-- inputs in interleaved rounds.
-- C = A * B^T: A m x k, B n x k (bf16), C m x n (f32). TFLOP/s counts 2 m n k.
--   luajit examples/gemm_sweep.lua [--m 8192] [--n 8192] [--k 8192] [--stages 2,3,4] [--tiles 128x128,128x256]
--                                  [--clusters 1,2] [--raster 1,16] [--epilogue tma,direct] [--release warpgroup]
--                                  [--schedules cooperative,pingpong] [--out build]
--   luajit bin/cuasync sweep examples/gemm_sweep.lua [the same] [--param stages=4,5] [--out build] ...
package.path = (debug.getinfo(1, "S").source:match("^@(.*)/") or ".") .. "/lib/?.lua;" .. package.path
require("example.checkout")   -- examples/lib/: this checkout's lua/ and build/ first on the paths
local cuasync = require("cuasync")
local gemm = require("cuasync.kernels.gemm")
local cli = require("cuasync.tools.cli")
local command = require("cuasync.tools.commands.sweep")
local gemm_data = require("example.gemm")

local o = cli.script{ sweep = true, options = {
  { "--m N", "rows of A and C", default = 8192 }, { "--n N", "rows of B, columns of C", default = 8192 },
  { "--k N", "the inner dimension", default = 8192 },
  { "--stages LIST", "stages of the pipeline", default = { 2, 3, 4, 5, 6, 7 } },
  { "--tiles LIST", "C tiles, MxN", default = { "128x128", "128x256", "256x128" } },
  { "--clusters LIST", "cluster sizes (2: the A tile multicast to both blocks)", default = { 1, 2 } },
  { "--raster LIST", "tile rows per band of the tile order", default = { 1, 16 } },
  { "--epilogue LIST", "tma, direct", default = { "tma" } },
  { "--schedules LIST", "cooperative, pingpong (pingpong: tiles 128x128, 64x256, ...; cluster 1)", default = { "cooperative", "pingpong" } },
  { "--release WHO", "who releases a consumed stage to the cluster (default: the plan's)", choices = { "warp", "warpgroup" } },
  { "--rounds N", "interleaved rounds", default = 5 }, { "--reps N", "launches timed per round", default = 10 },
  "on its own (through cuasync sweep, the command's --out serves):",
  { "--out DIR", "write NAME.csv, .json, .t4.json and two plots to DIR (made if missing)", alone = true },
} }
local m, n, k = o.m, o.n, o.k
local d   -- the inputs, the reference result and the output, made on first use
local function data() d = d or gemm_data(m, n, k) return d end
local function opts(p)
  return { stages = p.stages, tile = p.tile, m = m, n = n, k = k, cluster = p.cluster, epilogue = p.epilogue, raster = p.raster,
           release = o.release, schedule = p.schedule }
end

local S = cuasync.sweep{
  name = ("gemm_%dx%dx%d"):format(m, n, k), params = { stages = o.stages, tile = o.tiles, cluster = o.clusters, raster = o.raster,
    epilogue = o.epilogue, schedule = o.schedules },
  order = { "schedule", "cluster", "tile", "epilogue", "raster", "stages" },
  unit = "TFLOP/s", rounds = o.rounds, reps = o.reps,
  where = function(p) local ok, err = pcall(function() gemm.plan(opts(p)):check(gemm.limits()) end) return ok, err end,
  program = function(p) return gemm.program(opts(p)) end,
  build = function(p) local x = data() return gemm.build(opts(p), { a = x.a, b = x.b, c = x.c, ref = x.r }) end,
  baseline = { name = "cuBLAS", flops = 2 * m * n * k, run = function() local x = data() gemm.cublas(x.a, x.b, x.c, m, n, k) end },
}

-- After the table and the files, both ways: the knee, cuBLAS through the same gate, the plots.
local function after(_, run)
  if S.best then   -- where extra stages stop paying, beside Little's law from the memory probe
    print(S:knee{ x = "stages", series = { "schedule", "cluster", "tile" }, memory = cuasync.probe.memory(cuasync.current_device()) }:text())
  end
  if d then   -- the yardstick passes the same gate
    d.c:poison()
    gemm.cublas(d.a, d.b, d.c, m, n, k)
    cuasync.synchronize()
    local ok, why = d.verify()
    print(("cuBLAS against the reference: %s"):format(ok and "verified" or why))
  end
  if run.out and S.best then   -- a plot needs measured rows
    for _, f in ipairs({ { "", "tile" }, { "_cluster", "cluster" } }) do
      local ok, err, note = pcall(S.plot, S, run.out .. "/" .. S.name .. f[1] .. ".png", { x = "stages", y = "TFLOP/s", series = f[2] })
      print(ok and ("plot: " .. err .. (note and (": " .. note) or "")) or ("plot: not drawn (" .. tostring(err):gsub("^[^\n]-: ", "", 1) .. ")"))
    end
  end
end
if not cuasync.sweep.main() then return S, after end   -- `cuasync sweep` runs it, with its options
command.report(S:run(), o, after)
