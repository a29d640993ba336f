-- tma_copy.lua: copy >= 1 GiB with kernels-src/copy_bulk.cu (cp.async.bulk through a ring of
-- shared-memory stages), verify every byte, and report GB/s beside cuMemcpyDtoD measured in the
-- same run. GB/s counts bytes read + bytes written. cuMemcpyDtoD and every variant are timed in
-- interleaved rounds (each round: every one of them, --reps launches each), so that clock and
-- thermal drift fall on all alike; the figure is the median over rounds of each round's median.
--   luajit examples/tma_copy.lua [--bytes N] [--stages 2,4,10] [--chunk 4096] [--inflight 40960]
--                                [--store_lag 1] [--reps 10] [--rounds 5]
-- --inflight is the shared-memory ring bytes per SM the grid aims for (copy.INFLIGHT by default).
-- With no GPU it compiles every variant and says that the launches were skipped.
dofile((arg[0]:match("^(.*)/[^/]*$") or ".") .. "/_path.lua")
local cuasync = require("cuasync")
local copy = require("cuasync.kernels.copy")

local opts = dofile((arg[0]:match("^(.*)/[^/]*$") or ".") .. "/_args.lua")({ bytes = 2 ^ 30, stages = "10",
  chunk = "4096", inflight = tostring(copy.INFLIGHT), reps = 10, rounds = 5, store_lag = 1 },
  "tma_copy.lua [--bytes N] [--stages 2,4,10] [--chunk 4096,16384] [--inflight 40960] [--store_lag N] [--reps N] [--rounds N]")
local function list(s) local t = {} for x in s:gmatch("%d+") do t[#t + 1] = tonumber(x) end return t end

-- every (stages, chunk, inflight) that fits; the ones that do not are reported and skipped
local variants = {}
for _, st in ipairs(list(opts.stages)) do
  for _, ch in ipairs(list(opts.chunk)) do
    for _, inf in ipairs(list(opts.inflight)) do
      local fits, k = pcall(copy.bulk_kernel, { stages = st, chunk = ch, inflight = inf, store_lag = opts.store_lag })
      local label = ("copy_bulk stages=%d chunk=%d inflight=%d"):format(st, ch, inf)
      if fits then
        variants[#variants + 1] = { label = label, k = k, times = {} }
      else
        print(("%s: skipped, %s"):format(label, k))
      end
    end
  end
end

local ok, why = cuasync.available()
if not ok then
  for _, v in ipairs(variants) do
    print(("compiled %s for %s: cubin %d bytes"):format(v.label, v.k.module.arch, #v.k.module:cubin()))
  end
  print("launches skipped: " .. why)
  return
end

local dev = cuasync.device(0)
local bytes = opts.bytes
print(("%s, %d SMs; copying %.2f GiB; %d rounds of %d launches each (median of round medians)"):format(
      dev.name, dev.sms, bytes / 2 ^ 30, opts.rounds, opts.reps))

-- fresh random source, generated on the host in pinned memory; cuMemcpyDtoD, the yardstick,
-- then each variant: poisoned, run, every byte verified
local cp = dofile((arg[0]:match("^(.*)/[^/]*$") or ".") .. "/_copy.lua")(bytes)
local base = cp.base
cp.check(base.label, base.run)
for _, v in ipairs(variants) do
  v.run = v.k:prepare(cp.dst, cp.src, bytes)
  v.grid, v.per_sm = v.k:grid(bytes)
  cp.check(v.label, v.run)
end

cuasync.bench_rounds({ base, unpack(variants) }, { rounds = opts.rounds, reps = opts.reps })

local gbps = cp.gbps
local base_ms = base.ms
print(("%-48s %8.3f ms %8.1f GB/s   1.000"):format(base.label, base_ms, gbps(base_ms)))
local best
for _, v in ipairs(variants) do
  local ms = v.ms
  local ratio = base_ms / ms
  print(("%-48s %8.3f ms %8.1f GB/s   %.3f  (grid %d = %d/SM, %d KiB ring/SM, verified)"):format(
        v.label, ms, gbps(ms), ratio, v.grid, v.per_sm, v.per_sm * v.k.smem / 1024))
  if not best or ratio > best.ratio then best = { label = v.label, ratio = ratio } end
end
if best then print(("best: %s at %.3f of cuMemcpyDtoD"):format(best.label, best.ratio)) end
cp.close()
