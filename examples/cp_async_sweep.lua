-- cp_async_sweep.lua: cp.async pipelines built from cuasync.pipeline plans (kernels-src/
-- cp_async_copy.cu holds no byte count, vector count or offset), swept over work (a streaming
-- copy of 1 GiB through shared memory, and a gather of 256-byte rows through a random index
-- array) x stages x vector x completion (mbarrier noinc arrivals, or async-groups) x producer
-- (every thread, or 2 producer warps beside 4 consumer warps); each variant verified on fresh
-- data with its output poisoned first; GB/s (read + written) beside cuMemcpyDtoD in interleaved
-- rounds. Then the yardsticks, side by side in one set of rounds: the plan's unified noinc copy,
-- the same copy written by hand on pipeline_ring (cp_async_ring.cu), and through libcu++'s
-- cuda::pipeline + cuda::memcpy_async (cp_async_cxx.cu), at each vector size and stage count.
--   luajit examples/cp_async_sweep.lua [--work copy,gather] [--stages 1,2,3,4,5,6,7,8] [--vector 16,8,4]
--     [--completion mbarrier,group] [--producer all,warps] [--mib 1024] [--tile 16384] [--out DIR]
--   luajit bin/cuasync sweep examples/cp_async_sweep.lua [the same] [--param stages=2,4] [--out DIR] ...
package.path = (debug.getinfo(1, "S").source:match("^@(.*)/") or ".") .. "/lib/?.lua;" .. package.path
require("example.checkout")   -- examples/lib/: this checkout's lua/ and build/ first on the paths
local ffi = require("ffi")
local cuasync = require("cuasync")
local cp = require("cuasync.kernels.cp_async")
local cli = require("cuasync.tools.cli")
local command = require("cuasync.tools.commands.sweep")
local random = require("example.random")
local o = cli.script{ sweep = true, options = {
  { "--work LIST", "copy (a streaming copy through shared memory), gather (256-byte rows by a random index)",
    default = { "copy", "gather" } },
  { "--stages LIST", "stages of the pipeline", default = { 1, 2, 3, 4, 5, 6, 7, 8 } },
  { "--vector LIST", "bytes per cp.async: 16, 8, 4", default = { 16, 8, 4 } },
  { "--completion LIST", "mbarrier (noinc arrivals), group (async-groups)", default = { "mbarrier", "group" } },
  { "--producer LIST", "all (every thread), warps (2 producer warps beside 4 consumer warps)", default = { "all", "warps" } },
  { "--mib N", "MiB copied", default = 1024 },
  { "--tile N", "bytes per stage", default = 16384 },
  { "--row N", "bytes per gathered row", default = 256 },
  { "--rounds N", "interleaved rounds", default = 5 }, { "--reps N", "launches timed per round", default = 10 },
  { "--yardsticks YES", "then the plan beside the copy by hand and through libcu++", default = "yes", choices = { "yes", "no" } },
  "on its own (through cuasync sweep, the command's --out serves):",
  { "--out DIR", "write cp_async.csv, .json and .t4.json to DIR (made if missing)", alone = true },
} }
local bytes, tile, row = o.mib * 2 ^ 20, o.tile, o.row

local function opts(p)
  return { work = p.work, stages = p.stages, vector = p.vector, completion = p.completion, tile = tile, row = row,
           producer = p.producer == "all" and "all" or { warps = 2 }, consumer_warps = p.producer == "all" and 8 or 4 }
end

-- fresh random data, the gather's permutation of rows, and the two expected results (made on
-- first use: a worker that only compiles never touches the GPU)
local data
local function buffers()
  if data then return data end
  local d = { host = cuasync.host_alloc(bytes), gathered = cuasync.host_alloc(bytes), back = cuasync.host_alloc(bytes) }
  d.src, d.dst, d.idx = cuasync.alloc(bytes), cuasync.alloc(bytes), cuasync.alloc(bytes / row * 4)
  d.src:fill_random{ dtype = "u32", seed = random.seed() }
  d.src:download_to(d.host)
  local rows = bytes / row
  local idx_host = cuasync.host_alloc(rows * 4)
  local idx = ffi.cast("uint32_t *", idx_host.ptr)
  for r = 0, rows - 1 do idx[r] = r end
  local x = (os.time() % 2147483646) + 1
  for r = rows - 1, 1, -1 do   -- Fisher-Yates with Park-Miller
    x = x * 16807 % 2147483647
    local j = x % (r + 1)
    idx[r], idx[j] = idx[j], idx[r]
  end
  local src8, g8 = ffi.cast("uint8_t *", d.host.ptr), ffi.cast("uint8_t *", d.gathered.ptr)
  for r = 0, rows - 1 do ffi.copy(g8 + r * row, src8 + idx[r] * row, row) end
  d.idx:upload(idx_host)
  idx_host:close()
  data = d
  return d
end
local function build(options)
  local d = buffers()
  local gather = options.work == "gather"
  return cp.build(options, { dst = d.dst, src = d.src, bytes = bytes, idx = gather and d.idx or nil,
                             expect = gather and d.gathered or d.host, back = d.back })
end

local S = cuasync.sweep{ name = "cp_async", params = { work = o.work, stages = o.stages, vector = o.vector,
    completion = o.completion, producer = o.producer, tile = { tile } },
  order = { "work", "tile", "producer", "completion", "vector", "stages" },
  program = function(p) return cp.program(opts(p)) end, rounds = o.rounds, reps = o.reps,
  build = function(p) return build(opts(p)) end,
  baseline = { name = "cuMemcpyDtoD", run = function() local d = buffers() d.dst:upload(d.src) end, bytes = 2 * bytes } }
-- The yardsticks: the same streaming copy (unified, noinc arrivals) from the plan, by hand on
-- pipeline_ring and through libcu++, at each vector size and stage count, in one set of rounds.
-- The three kernels store each stage the same way, so what differs is the pipeline. After the
-- table and the files, both ways, at the sweep's vectors and stages (--param changes them too).
local function yardsticks()
  if o.yardsticks ~= "yes" or not cuasync.available() then return end
  local variants = { { label = "cuMemcpyDtoD", run = function() local d = buffers() d.dst:upload(d.src) end } }
  local IMPLS = { "plan", "plan_off", "ring", "cxx" }
  for _, vector in ipairs(S.params.vector) do
    for _, stages in ipairs(S.params.stages) do
      for _, impl in ipairs(IMPLS) do
        local v = build{ impl = impl == "plan_off" and "plan" or impl, stages = stages, tile = tile, vector = vector,
                         watchdog = impl == "plan_off" and false or nil }
        v.poison(); v.run()
        local ok, why = v.verify()
        if not ok then error(("%s, vector %d, %d stages: %s"):format(impl, vector, stages, why), 0) end
        variants[#variants + 1] = { label = impl, stages = stages, vector = vector, run = v.run }
      end
    end
  end
  cuasync.bench_rounds(variants, { rounds = o.rounds, reps = o.reps })
  local base = variants[1].ms
  print(("\nyardsticks: the 1 GiB streaming copy, unified, noinc arrivals; GB/s (ratio to cuMemcpyDtoD %.0f GB/s)"):format(
    2 * bytes / (base * 1e6)))
  print("plan: the plan's kernel as P:program builds it (watchdog on); plan, no wd: built with watchdog = false; ring and cxx have none")
  local function cell(v) return ("%5.0f (%.3f)"):format(2 * bytes / (v.ms * 1e6), base / v.ms) end
  for i = 2, #variants, #IMPLS do
    local p, q, r, c = variants[i], variants[i + 1], variants[i + 2], variants[i + 3]
    if i == 2 or p.vector ~= variants[i - #IMPLS].vector then
      print(("\nvector %d (%s)"):format(p.vector, p.vector == 16 and "cp.async.cg" or "cp.async.ca"))
      print(("%-7s %-16s %-16s %-16s %-16s %s"):format("stages", "plan", "plan, no wd", "ring (by hand)", "cxx (libcu++)",
        "plan/ring  no-wd/ring  plan/cxx"))
    end
    print(("%-7d %-16s %-16s %-16s %-16s %.3f      %.3f       %.3f"):format(p.stages, cell(p), cell(q), cell(r), cell(c),
      r.ms / p.ms, r.ms / q.ms, c.ms / p.ms))
  end
end
if not cuasync.sweep.main() then return S, yardsticks end   -- `cuasync sweep` runs it, with its options
command.report(S:run(), o, yardsticks)
