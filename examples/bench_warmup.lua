-- bench_warmup.lua: does the first variant a sweep measures get a figure it cannot hold? For each
-- warm-up (sweep field warmup_ms: 0, then the default 300), the chip idles first (--idle-s), then a
-- sweep of one GEMM variant (one point: nothing re-measured alone) is timed beside cuBLAS, then
-- the same sweep again at once (force: measured, not read from the store), on a chip now warm.
-- The line per warm-up: its ratio to cuBLAS after idle and right after, and their difference;
-- the issue's bar is 1%.
--   luajit examples/bench_warmup.lua [--idle-s 15] [--warmups 0,300] [--size 8192]
package.path = (debug.getinfo(1, "S").source:match("^@(.*)/") or ".") .. "/lib/?.lua;" .. package.path
require("example.checkout")
local cuasync = require("cuasync")
local gemm = require("cuasync.kernels.gemm")
local cli = require("cuasync.tools.cli")
local isolate = require("cuasync.tools.isolate")
local gemm_data = require("example.gemm")

local o = cli.script{ options = {
  { "--idle-s N", "seconds the chip idles before each cold sweep", default = 15 },
  { "--warmups LIST", "the warm-ups to compare, ms", default = { 0, 300 } },
  { "--size N", "m = n = k", default = 8192 },
} }
if not cuasync.available() then print("bench_warmup: no GPU here: nothing measured") return end
local m = o.size
local d = gemm_data(m, m, m)
local opts = { stages = 4, tile = "128x256", m = m, n = m, k = m, cluster = 1, raster = 16 }
local k = 0

local function sweep(warmup_ms)
  k = k + 1
  return cuasync.sweep{
    name = ("bench_warmup_%d_%d"):format(os.time(), k), params = { copy = { 1 } }, unit = "TFLOP/s", rounds = 5, reps = 10,
    warmup_ms = warmup_ms,
    program = function() return gemm.program(opts) end,
    build = function() return gemm.build(opts, { a = d.a, b = d.b, c = d.c, ref = d.r }) end,
    baseline = { name = "cuBLAS", flops = 2 * m * m * m, run = function() gemm.cublas(d.a, d.b, d.c, m, m, m) end },
  }
end

local function copy1(S)
  local r = S.rows[1]
  return r.kind == "measured" and r.ratio or nil, r
end

print(("GEMM %d^3, cluster 1, 128x256, raster 16, 4 stages; each warm-up after %d s idle"):format(m, o.idle_s))
for _, w in ipairs(o.warmups) do
  isolate.sleep(o.idle_s)
  local cold = sweep(w)
  cold:run{ quiet = true, force = true }
  local warm = sweep(w)
  warm:run{ quiet = true, force = true }
  local a, ra = copy1(cold)
  local b = copy1(warm)
  if not a or not b then print(("warmup_ms %d: the variant was not measured (%s)"):format(w, tostring(ra and ra.reason))) else
    print(("warmup_ms %4d: %.4f of cuBLAS on the chip after idle, %.4f right after: %+.2f%%; %s MHz, %s W cold"):format(
      w, a, b, 100 * (a / b - 1), tostring(ra.sm_mhz), tostring(ra.power_w)))
  end
end
