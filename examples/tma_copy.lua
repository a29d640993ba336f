-- tma_copy.lua: copy >= 1 GiB with kernels-src/copy_bulk.cu (cp.async.bulk through a ring of
-- shared-memory stages), as a cuasync.sweep over stages x chunk x bytes in flight per SM: each
-- variant verified byte for byte, then GB/s (read + written) beside cuMemcpyDtoD, timed in
-- interleaved rounds (median of round medians). Variants that cannot fit are pruned, with why.
--   luajit examples/tma_copy.lua [--bytes N] [--stages 2,4,10] [--chunk 4096,16384] [--inflight 40960]
--                                [--store_lag 1] [--reps 10] [--rounds 5]
--   luajit bin/cuasync sweep examples/tma_copy.lua [the same] [--param stages=2,4,10] ...
-- With no GPU it compiles every variant and says that the launches were skipped.
package.path = (debug.getinfo(1, "S").source:match("^@(.*)/") or ".") .. "/lib/?.lua;" .. package.path
require("example.checkout")   -- examples/lib/: this checkout's lua/ and build/ first on the paths
local cuasync = require("cuasync")
local copy = require("cuasync.kernels.copy")
local cli = require("cuasync.tools.cli")
local copy_data = require("example.copy")
local o = cli.script{ sweep = true, options = {
  { "--bytes N", "bytes copied", default = 2 ^ 30 },
  { "--stages LIST", "stages of the shared-memory ring", default = { 10 } },
  { "--chunk LIST", "bytes per stage", default = { 4096 } },
  { "--inflight LIST", "ring bytes per SM the grid aims for", default = { copy.INFLIGHT } },
  { "--store_lag N", "stages a store trails its load (STORE_LAG of copy_bulk.cu)", default = 1 },
  { "--rounds N", "interleaved rounds", default = 5 }, { "--reps N", "launches timed per round", default = 10 },
} }
local cp   -- the buffers, made on first use (a compile worker never touches the GPU)
local function buffers() cp = cp or copy_data(o.bytes) return cp end
local function opts(p) return { stages = p.stages, chunk = p.chunk, inflight = p.inflight, store_lag = o.store_lag } end

local S = cuasync.sweep{
  name = "tma_copy", order = { "stages", "chunk", "inflight" }, rounds = o.rounds, reps = o.reps,
  params = { stages = o.stages, chunk = o.chunk, inflight = o.inflight },
  where = function(p) local ok, err = pcall(copy.program, opts(p)) return ok, err end,
  program = function(p) return copy.program(opts(p)) end,
  build = function(p) local c = buffers() return copy.build(opts(p), { dst = c.dst, src = c.src, bytes = o.bytes }) end,
  baseline = { name = "cuMemcpyDtoD", run = function() buffers().base.run() end, bytes = 2 * o.bytes },
}
if not cuasync.sweep.main() then return S end   -- `cuasync sweep` runs it, with its options
S:run():print()
