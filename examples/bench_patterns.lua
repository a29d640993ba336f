-- bench_patterns.lua: the copy-and-compute patterns (kernels-src: stage_copy, block_async,
-- split_arrive, warp_specialized, pipelines, libcudacxx_pipelines, bulk_add_one) on >= 1 GiB of
-- u32, side by side with cuMemcpyDtoD of the same bytes in the same run. Each variant is first
-- run once on fresh random data into a poisoned output and every element checked against the CPU
-- reference; then every variant and cuMemcpyDtoD are timed in interleaved rounds (median of the
-- rounds' medians), each at 1, 2, 3, 4 blocks per SM and all resident blocks, and the best grid is
-- reported. GB/s counts bytes read + bytes written.
--   luajit examples/bench_patterns.lua [--bytes N] [--rounds 5] [--reps 10]
-- With no GPU it compiles every variant and says that the launches were skipped.
package.path = (debug.getinfo(1, "S").source:match("^@(.*)/") or ".") .. "/lib/?.lua;" .. package.path
require("example.checkout")   -- examples/lib/: this checkout's lua/ and build/ first on the paths
local cuasync = require("cuasync")
local patterns = cuasync.patterns
local random = require("example.random")

local opts = require("cuasync.tools.cli").script{ options = {
  { "--bytes N", "bytes in and out", default = 2 ^ 30 },
  { "--rounds N", "interleaved rounds", default = 5 }, { "--reps N", "launches timed per round", default = 10 },
} }

-- pattern, and the { stages[, tile_bytes] } to try (false: the pattern has neither). Copies
-- through shared memory ran best on the H200 with ~40 KiB in flight per SM in 4 KiB pieces
-- (examples/tma_copy.lua), hence the 10 x 4 KiB and 5 x 8 KiB rings.
local PLAN = {
  { "stage_sync", { false } }, { "stage_ca4", { false } }, { "stage_ca16", { false } }, { "stage_cg16", { false } },
  { "block_groups", { { 2 }, { 5 }, { 8 } } }, { "block_mbarrier", { { 2 }, { 5 }, { 8 } } },
  { "split_arrive", { false } }, { "joined", { false } },
  { "warp_specialized", { false } },
  { "pipe_single", { false } }, { "pipe_unified", { { 2 }, { 5 }, { 8 } } },
  { "pipe_partitioned", { { 2 }, { 5 }, { 8 }, { 10, 4096 } } },
  { "cxx_single", { false } }, { "cxx_unified", { { 2 }, { 4 } } }, { "cxx_partitioned", { { 2 }, { 4 } } },
  { "bulk_add_one", { { 2 }, { 5 }, { 10, 4096 } } },
}

local variants = {}
for _, e in ipairs(PLAN) do
  for _, st in ipairs(e[2]) do
    local ok, p = pcall(patterns.kernel, e[1], st and { stages = st[1], tile_bytes = st[2] } or nil)
    local label = not st and e[1] or st[2] and ("%s stages=%d tile=%d"):format(e[1], st[1], st[2])
                  or ("%s stages=%d"):format(e[1], st[1])
    if ok then variants[#variants + 1] = { label = label, p = p }
    else print(("%s: skipped, %s"):format(label, p)) end
  end
end

local ok, why = cuasync.available()
if not ok then
  for _, v in ipairs(variants) do
    print(("compiled %-28s for %s: cubin %d bytes"):format(v.label, v.p.module.arch, #v.p.module:cubin()))
  end
  print("launches skipped: " .. why)
  return
end

local dev = cuasync.device(0)
local n = math.floor(opts.bytes / 16) * 4
local bytes = n * 4
print(("%s, %d SMs; %.2f GiB of u32 in and out; %d rounds of %d launches (median of round medians)"):format(
      dev.name, dev.sms, bytes / 2 ^ 30, opts.rounds, opts.reps))

local host_in = cuasync.host_alloc(bytes)
local host_out = cuasync.host_alloc(bytes)
local hin, hout = host_in:as("uint32_t"), host_out:as("uint32_t")
local inp, out = cuasync.alloc(bytes), cuasync.alloc(bytes)
inp:fill_random{ dtype = "u32", seed = random.seed() }
inp:download_to(host_in)

local function gbps(ms) return 2 * bytes / (ms * 1e6) end

-- every variant: poisoned, run once at its default grid, every element verified
local runs = { { label = "cuMemcpyDtoD", run = function() out:upload(inp) end, times = {} } }
for _, v in ipairs(variants) do
  out:poison()
  v.p:prepare(out, inp, n)()
  cuasync.synchronize()
  out:download_to(host_out)
  local ok, err = v.p:verify(hin, hout, n)
  if not ok then error(v.label .. ": " .. err, 0) end
  local resident = v.p:resident()
  local seen = {}
  for _, per in ipairs({ 1, 2, 3, 4, resident }) do
    per = math.min(per, resident)
    if not seen[per] then
      seen[per] = true
      runs[#runs + 1] = { v = v, per = per, run = v.p:prepare(out, inp, n, { grid = per * dev.sms }), times = {} }
    end
  end
end
print(("every variant verified (%d elements each, output poisoned first)"):format(n))

cuasync.bench_rounds(runs, { rounds = opts.rounds, reps = opts.reps })

local base = runs[1].ms
for j = 2, #runs do
  local r = runs[j]
  if not r.v.best or r.ms < r.v.best.ms then r.v.best = r end
end

print(("%-36s %9s %8s %9s %7s"):format("pattern", "blocks/SM", "ms", "GB/s", "ratio"))
print(("%-36s %9s %8.3f %9.1f %7.3f"):format("cuMemcpyDtoD", "-", base, gbps(base), 1))
local best_of = {}
for _, v in ipairs(variants) do
  local b = v.best
  v.ratio = base / b.ms
  print(("%-36s %9d %8.3f %9.1f %7.3f"):format(v.label, b.per, b.ms, gbps(b.ms), v.ratio))
  local name = v.p.name
  if not best_of[name] or v.ratio > best_of[name].ratio then best_of[name] = v end
end

local function r(name) return best_of[name] and best_of[name].ratio or 0 end
local multi = math.max(r("pipe_unified"), r("pipe_partitioned"))
local top = variants[1]
for _, v in ipairs(variants) do if v.ratio > top.ratio then top = v end end
print(("multi-stage pipelines (best %.3f) vs single-stage pipe_single %.3f: %s"):format(
      multi, r("pipe_single"), multi > r("pipe_single") and "faster" or "NOT faster"))
print(("multi-stage pipelines (best %.3f) vs synchronous staging stage_sync %.3f: %s"):format(
      multi, r("stage_sync"), multi > r("stage_sync") and "faster" or "NOT faster"))
print(("split arrive/wait vs joined: %.3f vs %.3f of cuMemcpyDtoD (%.2fx)"):format(
      r("split_arrive"), r("joined"), r("split_arrive") / r("joined")))
print(("best: %s at %.3f of cuMemcpyDtoD (%s 0.95)"):format(top.label, top.ratio, top.ratio >= 0.95 and ">=" or "<"))
host_in:close(); host_out:close(); inp:close(); out:close()
