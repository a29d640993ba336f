-- bench_watchdog.lua: what the hang watchdog costs while idle. The bulk copy (copy_bulk.cu) and
-- the pipeline copy (pipeline_tma.cu from a cuasync.pipeline plan) are each built with the
-- watchdog off and on, verified, and timed side by side in interleaved rounds on 1 GiB; then
-- the cycles of one bounded wait: two threads ping-ponging through two mbarriers, and a wait
-- on a phase already complete (kernels-src/watchdog_cost.cu), off and on.
--   luajit examples/bench_watchdog.lua [--bytes N] [--reps 10] [--rounds 7] [--waits 100000]
package.path = (debug.getinfo(1, "S").source:match("^@(.*)/") or ".") .. "/lib/?.lua;" .. package.path
require("example.checkout")   -- examples/lib/: this checkout's lua/ and build/ first on the paths
local cuasync = require("cuasync")
local copy = require("cuasync.kernels.copy")
local copy_data = require("example.copy")
local o = require("cuasync.tools.cli").script{ options = {
  { "--bytes N", "bytes copied", default = 2 ^ 30 },
  { "--rounds N", "interleaved rounds", default = 7 }, { "--reps N", "launches timed per round", default = 10 },
  { "--waits N", "waits timed per kernel", default = 100000 },
} }

local gpu, why = cuasync.available()
local W = 16384
local Hh = math.floor(o.bytes / 4 / W / 64) * 64
local bytes = W * Hh * 4
local cp = gpu and copy_data(bytes)
local tm = cuasync.tensormap{ buffer = cp and cp.src or nil, ptr = not gpu and 256 or nil, bytes = not gpu and bytes or nil,
  encode = gpu, dtype = "f32", dims = { W, Hh }, box = { 64, 64 } }
local P = cuasync.pipeline{ name = "tma", stages = 4, loads = { { map = tm, name = "in" } }, producer = { warps = 1 },
                            consumer = { warps = 4 } }
local variants, cost = {}, {}
for _, on in ipairs({ false, true }) do
  local tag = on and "watchdog on " or "watchdog off"
  variants[#variants + 1] = { label = "copy_bulk 10 stages, " .. tag, bulk = copy.bulk_kernel{ stages = 10, watchdog = on },
                              on = on, times = {} }
  variants[#variants + 1] = { label = "pipeline_tma 4 stages, " .. tag, times = {}, on = on,
    mod = P:program{ file = "pipeline_tma.cu", defines = { BOX_X = 64, BOX_Y = 64 }, watchdog = on }:compile() }
  cost[#cost + 1] = { on = on, mod = cuasync.program{ file = "watchdog_cost.cu", watchdog = on }:compile() }
end
if not gpu then
  for _, v in ipairs(variants) do print("compiled " .. v.label) end
  return print("launches skipped: " .. why)
end

local dev = cuasync.device(0)
for _, v in ipairs(variants) do
  if v.bulk then
    v.run = v.bulk:prepare(cp.dst, cp.src, bytes)
  else
    local k = v.mod:kernel("pipeline_tma", "tensormap, ptr, u32, u32, u32")
    local grid = dev.sms * math.min(4, k:occupancy(P.block, P.smem_bytes))
    v.run = k:prepare(P:launch_config{ grid = grid }, tm, cp.dst, W, W / 64, W / 64 * Hh / 64)
  end
  cp.check(v.label, v.run)
end
cuasync.bench_rounds({ cp.base, unpack(variants) }, { rounds = o.rounds, reps = o.reps })
print(("%s; %.2f GiB copied; median of %d round medians of %d launches"):format(dev.name, bytes / 2 ^ 30, o.rounds, o.reps))
print(("%-36s %8.3f ms %8.1f GB/s"):format(cp.base.label, cp.base.ms, cp.gbps(cp.base.ms)))
for i, v in ipairs(variants) do
  local off = v.on and variants[i - 2] or nil
  print(("%-36s %8.3f ms %8.1f GB/s   %.3f of DtoD%s"):format(v.label, v.ms, cp.gbps(v.ms), cp.base.ms / v.ms,
    off and ("   on/off time %.4f (%+.2f%%)"):format(v.ms / off.ms, (v.ms / off.ms - 1) * 100) or ""))
end
cp.close()

local out = cuasync.alloc(16)
for _, c in ipairs(cost) do
  local k = c.mod:kernel("wait_cost", "u32, ptr")
  k:launch({ grid = 1, block = 64 }, o.waits, out)
  cuasync.synchronize()
  local cyc = out:download("uint64_t", 2)
  c.pingpong, c.ready = tonumber(cyc[0]) / o.waits, tonumber(cyc[1]) / o.waits
end
for _, c in ipairs(cost) do
  print(("one wait, watchdog %-3s: %6.1f cycles per ping-pong round trip (2 blocking waits), %5.1f cycles per wait on a completed phase"):format(
    c.on and "on" or "off", c.pingpong, c.ready))
end
print(("watchdog cost per wait: %+.1f cycles per round trip, %+.1f cycles per completed-phase wait"):format(
  cost[2].pingpong - cost[1].pingpong, cost[2].ready - cost[1].ready))
out:close()
