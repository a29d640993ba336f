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
local ffi = require("ffi")
local cuasync = require("cuasync")
local copy = require("cuasync.copy")
local random = dofile((arg[0]:match("^(.*)/[^/]*$") or ".") .. "/_random.lua")

local opts = { bytes = 2 ^ 30, stages = "10", chunk = "4096", inflight = tostring(copy.INFLIGHT),
               reps = 10, rounds = 5, store_lag = 1 }
local i = 1
while i <= #arg do
  local k = arg[i]:match("^%-%-(.+)$")
  if not k or opts[k] == nil or arg[i + 1] == nil then
    io.stderr:write("usage: tma_copy.lua [--bytes N] [--stages 2,4,10] [--chunk 4096,16384] [--inflight 40960]"
                    .. " [--store_lag N] [--reps N] [--rounds N]\n")
    os.exit(2)
  end
  opts[k] = type(opts[k]) == "number" and tonumber(arg[i + 1]) or arg[i + 1]
  i = i + 2
end
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

-- fresh random source, generated on the host in pinned memory
local host = cuasync.host_alloc(bytes)
random.fill(host.ptr, bytes / 8)
local src, dst = cuasync.alloc(bytes), cuasync.alloc(bytes)
src:upload(host)
local back = cuasync.host_alloc(bytes)
pcall(ffi.cdef, "int memcmp(const void *a, const void *b, size_t n);")

local function verify(label)
  ffi.fill(back.ptr, bytes, 0)
  dst:download_to(back)
  if ffi.C.memcmp(back.ptr, host.ptr, bytes) ~= 0 then
    error(label .. ": copy differs from the source", 0)
  end
end

local function gbps(ms) return 2 * bytes / (ms * 1e6) end
local median = cuasync.median

-- cuMemcpyDtoD, the yardstick, then each variant: poisoned, run, every byte verified
local base = { label = "cuMemcpyDtoD", run = function() dst:upload(src) end, times = {} }
dst:fill(0xA5)
base.run()
verify(base.label)
for _, v in ipairs(variants) do
  v.run = v.k:prepare(dst, src, bytes)
  v.grid, v.per_sm = v.k:grid(bytes)
  dst:fill(0xA5)
  v.run()
  cuasync.synchronize()
  verify(v.label)
end

for _ = 1, opts.rounds do
  for _, v in ipairs({ base, unpack(variants) }) do
    v.times[#v.times + 1] = cuasync.bench(v.run, { warmup = 2, reps = opts.reps }).median
  end
end

local base_ms = median(base.times)
print(("%-48s %8.3f ms %8.1f GB/s   1.000"):format(base.label, base_ms, gbps(base_ms)))
local best
for _, v in ipairs(variants) do
  local ms = median(v.times)
  local ratio = base_ms / ms
  print(("%-48s %8.3f ms %8.1f GB/s   %.3f  (grid %d = %d/SM, %d KiB ring/SM, verified)"):format(
        v.label, ms, gbps(ms), ratio, v.grid, v.per_sm, v.per_sm * v.k.smem / 1024))
  if not best or ratio > best.ratio then best = { label = v.label, ratio = ratio } end
end
if best then print(("best: %s at %.3f of cuMemcpyDtoD"):format(best.label, best.ratio)) end
host:close(); back:close(); src:close(); dst:close()
