-- cluster_histogram.lua: a histogram of random u32 values whose bins are spread over the shared
-- memory of a cluster's blocks (distributed shared memory, kernels-src/cluster.cu), as a
-- cuasync.sweep over cluster sizes 1..16, beside the same histogram with one global atomic per
-- value (the baseline) in interleaved rounds. Every result is checked against a CPU histogram of
-- the same data. Each size launches as many clusters as can be co-resident (k:max_active_clusters);
-- a size with none is pruned, with why. GB/s counts the values read.
--   luajit examples/cluster_histogram.lua [--n 67108864] [--bins 32768] [--block 512] [--reps 10] [--rounds 5]
--   luajit bin/cuasync sweep examples/cluster_histogram.lua [the same] [--param cluster=1,2] ...
package.path = (debug.getinfo(1, "S").source:match("^@(.*)/") or ".") .. "/lib/?.lua;" .. package.path
require("example.checkout")   -- examples/lib/: this checkout's lua/ and build/ first on the paths
local ffi = require("ffi")
local bit = require("bit")
local cuasync = require("cuasync")
local cli = require("cuasync.tools.cli")
local random = require("example.random")
local o = cli.script{ sweep = true, options = {
  { "--n N", "values counted", default = 2 ^ 26 }, { "--bins N", "bins (a power of two)", default = 32768 },
  { "--block N", "threads per block", default = 512 },
  { "--rounds N", "interleaved rounds", default = 5 }, { "--reps N", "launches timed per round", default = 10 },
} }
local N, NB = o.n, o.bins
assert(NB >= 16 and bit.band(NB, NB - 1) == 0, "--bins must be a power of two >= 16")
local function program() return cuasync.program{ file = "cluster.cu" } end
local g   -- the data, the histogram and the CPU's counts, made on first use
local function data()
  if g then return g end
  g = { host = cuasync.host_alloc(N * 4), values = cuasync.alloc(N * 4), hist = cuasync.alloc(NB * 4), want = ffi.new("uint32_t[?]", NB) }
  g.values:fill_random{ dtype = "u32", seed = random.seed() }
  g.values:download_to(g.host)
  local w = ffi.cast("uint32_t *", g.host.ptr)
  for j = 0, N - 1 do local b = bit.band(w[j], NB - 1); g.want[b] = g.want[b] + 1 end
  local mod, dev = program():compile(), cuasync.current_device()
  g.ck, g.gk = mod:kernel("cluster_histogram", "ptr, u64, ptr, u32"), mod:kernel("global_histogram", "ptr, u64, ptr, u32")
  g.global = g.gk:prepare({ grid = dev.sms * g.gk:occupancy(o.block, 0), block = o.block }, g.values, N, g.hist, NB)
  return g
end
local function verify()   -- the histogram accumulates: only the run after poison (zeros) is checked
  local got = g.hist:download("uint32_t", NB)
  for b = 0, NB - 1 do
    if got[b] ~= g.want[b] then return false, ("bin %d is %d, the CPU counted %d"):format(b, got[b], g.want[b]) end
  end
  return true
end

local S = cuasync.sweep{
  name = "cluster_histogram", params = { cluster = { 1, 2, 4, 8, 16 } }, program = program, rounds = o.rounds, reps = o.reps,
  build = function(p)
    local d = data()
    local cfg = { grid = p.cluster, block = o.block, cluster = p.cluster, non_portable = p.cluster > 8, smem = NB / p.cluster * 4 }
    local ok, active = pcall(d.ck.max_active_clusters, d.ck, cfg)
    if not ok or active == 0 then return nil, ok and "no cluster of this shape can be resident" or active end
    cfg.grid = active * p.cluster
    return { run = d.ck:prepare(cfg, d.values, N, d.hist, NB), bytes = N * 4, verify = verify,
             poison = function() d.hist:fill(0) end }
  end,
  baseline = { name = "global atomics", run = function() data().global() end, bytes = N * 4 },
}
if not cuasync.sweep.main() then return S end   -- `cuasync sweep` runs it, with its options
S:run():print()
