-- bench_trace.lua: what the timeline costs and what it shows (docs/timeline.md).
--   copy:  make run's best variant (pipeline_tma: 64-row boxes, 2 consumer warps, 3 stages, 40960
--          bytes in flight per SM) untraced, traced 1 block in 8 (the default) and traced in every
--          block, timed in the same interleaved rounds beside cuMemcpyDtoD; then its summary
--   gemm:  the GEMM (128x256 tiles, cluster 1, 4 stages; raster 1 and one store buffer unless told:
--          --raster 16 --store-buffers 2 is the family's best 8192^3 variant) the same three ways beside cuBLAS
--   knee:  the GEMM (128x128 tiles) at 2 to 6 stages, traced: how long consumers wait on full, the producer
--          on empty, a stage from issue to landed, and the epilogue (docs/timeline.md reads it)
-- Every variant is verified before it is timed.
--   luajit examples/bench_trace.lua [--parts copy,gemm,knee] [--m 8192] [--raster 1] [--store-buffers 1]
--                                   [--out DIR (the traces' JSON and SVG)]
package.path = (debug.getinfo(1, "S").source:match("^@(.*)/") or ".") .. "/lib/?.lua;" .. package.path
require("example.checkout")   -- examples/lib/: this checkout's lua/ and build/ first on the paths
local cuasync = require("cuasync")
local cli = require("cuasync.tools.cli")
local gemm = require("cuasync.kernels.gemm")
local copy_data = require("example.copy")
local gemm_data = require("example.gemm")

local o = cli.script{ options = {
  { "--parts LIST", "copy, gemm, knee", default = { "copy", "gemm", "knee" } },
  { "--m N", "the GEMM's m = n = k", default = 8192 },
  { "--stages LIST", "the knee's stage counts", default = { 2, 3, 4, 5, 6 } },
  { "--tile MxN", "the knee's GEMM tile", default = "128x128" },
  { "--raster N", "the GEMM part's raster (1, as docs/timeline.md's table; 16: the family's best)", default = 1 },
  { "--store-buffers N", "the GEMM part's TMA epilogue chunk buffers (1, as the table; 2: the family's best)", default = 1 },
  { "--rounds N", "interleaved rounds", default = 7 }, { "--reps N", "launches timed per round", default = 10 },
  { "--out DIR", "write each traced run's Perfetto JSON and SVG there" },
} }
local parts = {}
for _, p in ipairs(o.parts) do parts[p] = true end
-- the GEMM part's variant refused by its plan's rule before anything runs
if parts.gemm then
  local ok, e = pcall(gemm.plan, { stages = 4, tile = "128x256", cluster = 1, raster = o.raster, store_buffers = o.store_buffers,
                                   m = o.m, n = o.m, k = o.m })
  if not ok then io.stderr:write("bench_trace.lua: --raster / --store-buffers: ", tostring(e), "\n") os.exit(2) end
end
if not cuasync.available() then print("bench_trace: no GPU (" .. select(2, cuasync.available()) .. "): nothing to measure") return end
-- "none": compiled with trace but no block traced (what the checks alone cost every block)
local TRACES = { { "off", false }, { "none", { blocks = { 2 ^ 31 - 1 } } }, { "1 in 8", true }, { "all blocks", { blocks = "all" } } }

-- Time variants beside a baseline; print each one's ms and its ratio to the untraced one.
local function table_of(title, base, variants)
  local all = { base }
  for _, v in ipairs(variants) do all[#all + 1] = v end
  cuasync.bench_rounds(all, { rounds = o.rounds, reps = o.reps })
  print(("%s (%d rounds x %d reps, medians; %s %.4f ms)"):format(title, o.rounds, o.reps, base.label, base.ms))
  for _, v in ipairs(variants) do
    print(("  trace %-10s %.4f ms  %.4f x untraced  %.3f of %s"):format(v.label, v.ms, v.ms / variants[1].ms, base.ms / v.ms, base.label))
  end
end

local function keep(T, name)
  if not o.out then return end
  print(("  wrote %s and %s"):format(T:perfetto(o.out .. "/" .. name .. ".json"), T:svg(o.out .. "/" .. name .. ".svg")))
end

if parts.copy then
  local W, Hh, rows = 16384, 8192, 64
  local bytes = W * Hh * 4
  local c = copy_data(bytes)
  local function map(real) return cuasync.tensormap{ buffer = real and c.src or nil, ptr = not real and 256 or nil,
    bytes = not real and bytes or nil, encode = real, dtype = "f32", dims = { W, Hh }, box = { 64, rows } } end
  local P = cuasync.pipeline{ name = "tma", stages = 3, loads = { { map = map(false), name = "in" } },
                              producer = { warps = 1 }, consumer = { warps = 2 } }
  local dev = cuasync.current_device()
  local variants, kernels = {}, {}
  for i, t in ipairs(TRACES) do
    local k = P:program{ file = "pipeline_tma.cu", defines = { BOX_X = 64, BOX_Y = rows }, trace = t[2] }:compile()
      :kernel("pipeline_tma", "tensormap, ptr, u32, u32, u32")
    local per_sm = math.min(4, k:occupancy(P.block, P.smem_bytes), math.max(1, math.floor(40960 / (P.stages * P.tx_bytes))))
    local run = k:prepare(P:check(dev):launch_config{ grid = dev.sms * per_sm }, map(true), c.dst, W, W / 64, W / 64 * Hh / rows)
    c.check("pipeline_tma trace " .. t[1], run)
    variants[i], kernels[i] = { label = t[1], run = run }, k
  end
  table_of("make run's best variant, 1 GiB copy", c.base, variants)
  c.check("pipeline_tma traced", variants[3].run)
  local T = kernels[3]:trace()
  print(T:text())
  keep(T, "pipeline_tma")
end

local d
if parts.gemm or parts.knee then d = gemm_data(o.m, o.m, o.m) end
local function gemm_build(stages, trace, tile, raster, store_buffers)
  local b = gemm.build({ stages = stages, tile = tile or "128x256", cluster = 1, raster = raster or 1, store_buffers = store_buffers,
                         m = o.m, n = o.m, k = o.m,
                         trace = trace and (trace == true and { names = gemm.TRACE_NAMES } or trace) or nil },
                       { a = d.a, b = d.b, c = d.c, ref = d.r })
  b.poison(); b.run(); cuasync.synchronize()
  assert(b.verify())
  return b
end

if parts.gemm then
  local variants = {}
  for i, t in ipairs(TRACES) do
    local tr = t[2]
    if type(tr) == "table" then tr = { blocks = tr.blocks, names = gemm.TRACE_NAMES } end
    variants[i] = { label = t[1], run = gemm_build(4, tr, nil, o.raster, o.store_buffers).run }
  end
  table_of(("GEMM %d^3, 128x256, cluster 1, 4 stages, raster %d, %d store buffer%s"):format(o.m, o.raster, o.store_buffers,
           o.store_buffers == 1 and "" or "s"),
           { label = "cuBLAS", run = function() gemm.cublas(d.a, d.b, d.c, o.m, o.m, o.m) end }, variants)
end

if parts.knee then
  print(("GEMM %d^3, %s, cluster 1: the timeline at each stage count (1 block in 8)"):format(o.m, o.tile))
  print("  stages  consumers wait on full  producer waits on empty  issue->landed (median)  epilogue  diagnosis")
  for _, s in ipairs(o.stages) do
    local b = gemm_build(s, true, o.tile)
    local T = b.kernel:trace()
    local sum = T:summary()
    local lat = {}
    for _, st in ipairs(sum.stages or {}) do if st.median then lat[#lat + 1] = st.median end end
    table.sort(lat)
    local epi = 0
    for _, sp in ipairs(T.spans) do if sp.kind == "range" then epi = epi + (sp.t1 - sp.t0) end end
    local consumer_tracks = 0
    for _, tr in ipairs(T.tracks) do if tr.role == "consumer" then consumer_tracks = consumer_tracks + 1 end end
    print(("  %6d  %21.1f%%  %22.1f%%  %19.0f ns  %7.1f%%  %s"):format(s, 100 * (sum.consumer_full or 0), 100 * (sum.producer_empty or 0),
      lat[math.ceil(#lat / 2)] or 0, consumer_tracks > 0 and 100 * epi / (T.duration * consumer_tracks) or 0, sum.diagnosis or ""))
    keep(T, ("gemm_%d_stages"):format(s))
  end
end
