-- gemm_sweep.lua: the flagship. A Hopper GEMM mainloop (kernels-src/gemm_tma.cu: TMA loads of A and
-- B tiles with the 128B swizzle, wgmma from shared memory, warp-specialized on a cuasync.pipeline
-- plan, C out through TMA stores) swept over stages x tile x cluster (2: the A tile multicast to
-- both blocks of a cluster) x raster (tiles in bands of that many tile rows) x epilogue (TMA
-- stores, or direct stores that leave the scratch to stages), pruned by the plan's own check
-- (shared memory), every variant verified against a reference GEMM (kernels-src/gemm_ref.cu,
-- itself checked against a CPU GEMM by spec/gemm_spec.lua), timed beside cuBLAS on the same
-- inputs in interleaved rounds.
-- C = A * B^T: A m x k, B n x k (bf16), C m x n (f32). TFLOP/s counts 2 m n k.
--   luajit examples/gemm_sweep.lua [--m 8192] [--n 8192] [--k 8192] [--stages 2,3,4,5,6,7]
--                                  [--tiles 128x128,128x256,256x128] [--clusters 1,2] [--raster 1,16]
--                                  [--epilogue tma,direct] [--release warp|warpgroup] [--out build]
local dir = arg[0]:match("^(.*)/[^/]*$") or "."
dofile(dir .. "/_path.lua")
local cuasync = require("cuasync")
local gemm = require("cuasync.kernels.gemm")
local o = dofile(dir .. "/_args.lua")({ m = 8192, n = 8192, k = 8192, stages = "2,3,4,5,6,7", tiles = "128x128,128x256,256x128",
  clusters = "1,2", raster = "1,16", epilogue = "tma", release = "", rounds = 5, reps = 10, out = "" },
  "gemm_sweep.lua [--m N] [--n N] [--k N] [--stages 2,3,4] [--tiles 128x128,128x256] [--clusters 1,2] [--raster 1,16] [--epilogue tma,direct] [--release warpgroup] [--out DIR]")
local m, n, k = o.m, o.n, o.k
local stages, tiles, clusters, rasters = {}, {}, {}, {}
for s in tostring(o.raster):gmatch("%d+") do rasters[#rasters + 1] = tonumber(s) end
local epilogues = {}
for s in tostring(o.epilogue):gmatch("%a+") do epilogues[#epilogues + 1] = s end
for s in o.stages:gmatch("%d+") do stages[#stages + 1] = tonumber(s) end
for s in tostring(o.clusters):gmatch("%d+") do clusters[#clusters + 1] = tonumber(s) end
for t in o.tiles:gmatch("[%dx]+") do tiles[#tiles + 1] = t end
local d   -- the inputs, the reference result and the output, made on first use
local function data() d = d or dofile(dir .. "/_gemm.lua")(m, n, k) return d end
local function opts(p)
  return { stages = p.stages, tile = p.tile, m = m, n = n, k = k, cluster = p.cluster, epilogue = p.epilogue, raster = p.raster,
           release = o.release ~= "" and o.release or nil }
end

local S = cuasync.sweep{
  name = ("gemm_%dx%dx%d"):format(m, n, k), params = { stages = stages, tile = tiles, cluster = clusters, raster = rasters, epilogue = epilogues },
  order = { "cluster", "tile", "epilogue", "raster", "stages" },
  unit = "TFLOP/s", rounds = o.rounds, reps = o.reps,
  where = function(p) local ok, err = pcall(function() gemm.plan(opts(p)):check(gemm.limits()) end) return ok, err end,
  program = function(p) return gemm.program(opts(p)) end,
  build = function(p) local x = data() return gemm.build(opts(p), { a = x.a, b = x.b, c = x.c, ref = x.r }) end,
  baseline = { name = "cuBLAS", flops = 2 * m * n * k, run = function() local x = data() gemm.cublas(x.a, x.b, x.c, m, n, k) end },
}
S:run():print()
if S.best then   -- where extra stages stop paying, beside Little's law from the memory probe
  print(S:knee{ x = "stages", series = { "cluster", "tile" }, memory = cuasync.probe.memory(cuasync.current_device()) }:text())
end
if d then   -- the yardstick passes the same gate
  d.c:fill(0xFF)
  gemm.cublas(d.a, d.b, d.c, m, n, k)
  cuasync.synchronize()
  local ok, why = d.verify()
  print(("cuBLAS against the reference: %s"):format(ok and "verified" or why))
end
if o.out ~= "" then
  print("wrote " .. S:csv(o.out .. "/" .. S.name .. ".csv") .. ", " .. S:json(o.out .. "/" .. S.name .. ".json"))
  local ok, err = pcall(S.plot, S, o.out .. "/" .. S.name .. ".png", { x = "stages", y = "TFLOP/s", series = "tile" })
  print(ok and ("plot: " .. err) or tostring(err))
  ok, err = pcall(S.plot, S, o.out .. "/" .. S.name .. "_cluster.png", { x = "stages", y = "TFLOP/s", series = "cluster" })
  print(ok and ("plot: " .. err) or tostring(err))
end
