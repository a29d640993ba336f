-- cluster_histogram.lua: a histogram of random u32 values whose bins are spread over the shared
-- memory of a cluster's blocks (distributed shared memory, kernels-src/cluster.cu), for cluster
-- sizes 1, 2, 4, 8 and 16, beside the same histogram with one global atomic per value, in one
-- run (interleaved rounds, median of round medians). Every result is checked against a CPU
-- histogram of the same data. Each size launches as many clusters as can be co-resident
-- (k:max_active_clusters), which is printed.
--   luajit examples/cluster_histogram.lua [--n 67108864] [--bins 32768] [--block 512] [--reps 10] [--rounds 5]
dofile((arg[0]:match("^(.*)/[^/]*$") or ".") .. "/_path.lua")
local ffi = require("ffi")
local cuasync = require("cuasync")
local random = dofile((arg[0]:match("^(.*)/[^/]*$") or ".") .. "/_random.lua")

local opts = dofile((arg[0]:match("^(.*)/[^/]*$") or ".") .. "/_args.lua")({ n = 2 ^ 26, bins = 32768, block = 512, reps = 10, rounds = 5 },
  "cluster_histogram.lua [--n N] [--bins N (a power of two)] [--block N] [--reps N] [--rounds N]")
local N, NB = opts.n, opts.bins
assert(NB >= 16 and bit.band(NB, NB - 1) == 0, "--bins must be a power of two >= 16")
assert(N % 2 == 0, "--n must be even")

local mod = cuasync.program{ file = "cluster.cu" }:compile()
local ok, why = cuasync.available()
if not ok then
  print(("compiled cluster_histogram and global_histogram for %s: cubin %d bytes"):format(mod.arch, #mod:cubin()))
  print("launches skipped: " .. why)
  return
end

local dev = cuasync.device(0)
print(("%s, %d SMs: histogram of %d random u32 values into %d bins, block %d; %d rounds of %d launches"):format(
  dev.name, dev.sms, N, NB, opts.block, opts.rounds, opts.reps))
local host = cuasync.host_alloc(N * 4)
random.fill(host.ptr, N / 2)
local data, hist = cuasync.alloc(N * 4), cuasync.alloc(NB * 4)
data:upload(host)
local want = ffi.new("uint32_t[?]", NB)
local w = ffi.cast("uint32_t *", host.ptr)
for j = 0, N - 1 do local b = bit.band(w[j], NB - 1); want[b] = want[b] + 1 end

local ck = mod:kernel("cluster_histogram", "ptr, u64, ptr, u32")
local gk = mod:kernel("global_histogram", "ptr, u64, ptr, u32")
local variants = {}
local occ = gk:occupancy(opts.block, 0)
variants[1] = { label = "global atomics", run = gk:prepare({ grid = dev.sms * occ, block = opts.block }, data, N, hist, NB),
                note = ("grid %d"):format(dev.sms * occ), times = {} }
for _, size in ipairs({ 1, 2, 4, 8, 16 }) do
  local smem = NB / size * 4
  local cfg = { grid = size, block = opts.block, cluster = size, non_portable = size > 8, smem = smem }
  local ok_, active = pcall(ck.max_active_clusters, ck, cfg)
  if not ok_ or active == 0 then
    print(("cluster size %2d: skipped (%s)"):format(size, ok_ and "no cluster of this shape can be resident" or active))
  else
    cfg.grid = active * size
    variants[#variants + 1] = { label = ("cluster of %d"):format(size), run = ck:prepare(cfg, data, N, hist, NB), times = {},
      note = ("%d KiB bins/block, max_active_clusters %d -> grid %d"):format(smem / 1024, active, cfg.grid) }
  end
end

for _, v in ipairs(variants) do
  hist:fill(0)         -- the histogram accumulates: the checked run starts from zero
  v.run()
  cuasync.synchronize()
  local got = hist:download("uint32_t", NB)
  for b = 0, NB - 1 do
    if got[b] ~= want[b] then error(("%s: bin %d is %d, the CPU counted %d"):format(v.label, b, got[b], want[b]), 0) end
  end
end
-- timed launches accumulate into hist; only the first run above is checked
cuasync.bench_rounds(variants, { rounds = opts.rounds, reps = opts.reps })
local base = variants[1].ms
print(("%-16s %9s %11s %9s  %s"):format("variant", "ms", "Gvalues/s", "vs global", "config"))
for _, v in ipairs(variants) do
  local ms = v.ms
  print(("%-16s %9.3f %11.2f %8.2fx  %s (verified)"):format(v.label, ms, N / (ms * 1e6), base / ms, v.note))
end
host:close(); data:close(); hist:close()
