-- pipeline_tma.lua: a 2D TMA copy built from cuasync.pipeline (kernels-src/pipeline_tma.cu holds no
-- byte count or smem offset), over stages 2..8: each verified on fresh data, then GB/s (read +
-- written) beside cuMemcpyDtoD, timed in interleaved rounds. Without a GPU: compiles, skips launches.
--   luajit examples/pipeline_tma.lua [--width 16384] [--height 16384] [--reps 10] [--rounds 5]
local dir = arg[0]:match("^(.*)/[^/]*$") or "."
dofile(dir .. "/_path.lua")
local cuasync = require("cuasync")
local o = dofile(dir .. "/_args.lua")({ width = 16384, height = 16384, reps = 10, rounds = 5 },
  "pipeline_tma.lua [--width N] [--height N] [--reps N] [--rounds N]")
local W, Hh, BX, BY = o.width, o.height, 64, 64
local gpu, why = cuasync.available()
local cp = gpu and dofile(dir .. "/_copy.lua")(W * Hh * 4)
local tm = cuasync.tensormap{ buffer = cp and cp.src or nil, ptr = not gpu and 256 or nil, bytes = not gpu and W * Hh * 4 or nil,
  encode = gpu, dtype = "f32", dims = { W, Hh }, box = { BX, BY } }
local variants = {}
for stages = 2, 8 do
  local P = cuasync.pipeline{ name = "tma", stages = stages, loads = { { map = tm, name = "in" } },
                              producer = { warps = 1 }, consumer = { warps = 4 } }
  local prog = P:program{ file = "pipeline_tma.cu", defines = { BOX_X = BX, BOX_Y = BY } }
  variants[#variants + 1] = { P = P, mod = prog:compile(), times = {},
    label = ("stages %d (tx %d B, smem %d B)"):format(stages, P.tx_bytes, P.smem_bytes) }
end
if not gpu then
  for _, v in ipairs(variants) do print(("compiled %s: cubin %d bytes"):format(v.label, #v.mod:cubin())) end
  return print("launches skipped: " .. why)
end
local dev = cuasync.device(0)
for _, v in ipairs(variants) do
  v.k = v.mod:kernel("pipeline_tma", "tensormap, ptr, u32, u32, u32")
  v.grid = dev.sms * math.min(4, v.k:occupancy(v.P.block, v.P.smem_bytes))
  v.run = v.k:prepare(v.P:check(dev):launch_config{ grid = v.grid }, tm, cp.dst, W, W / BX, W / BX * Hh / BY)
  cp.check(v.label, v.run)
end
cuasync.bench_rounds({ cp.base, unpack(variants) }, { rounds = o.rounds, reps = o.reps })
print(("%s; %d x %d f32 (%.2f GiB), box %d x %d; median of %d round medians"):format(dev.name, W, Hh, W * Hh * 4 / 2 ^ 30, BX, BY, o.rounds))
print(("%-36s %8.3f ms %8.1f GB/s   1.000"):format(cp.base.label, cp.base.ms, cp.gbps(cp.base.ms)))
for _, v in ipairs(variants) do
  print(("%-36s %8.3f ms %8.1f GB/s   %.3f  (grid %d, verified)"):format(v.label, v.ms, cp.gbps(v.ms), cp.base.ms / v.ms, v.grid))
end
cp.close()
