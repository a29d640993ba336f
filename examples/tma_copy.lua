-- tma_copy.lua: copy >= 1 GiB with kernels-src/copy_bulk.cu (cp.async.bulk through a ring of
-- shared-memory stages), as a cuasync.sweep over stages x chunk x bytes in flight per SM: each
-- variant verified byte for byte, then GB/s (read + written) beside cuMemcpyDtoD, timed in
-- interleaved rounds (median of round medians). Variants that cannot fit are pruned, with why.
--   luajit examples/tma_copy.lua [--bytes N] [--stages 2,4,10] [--chunk 4096,16384] [--inflight 40960]
--                                [--store_lag 1] [--reps 10] [--rounds 5]
-- With no GPU it compiles every variant and says that the launches were skipped.
local dir = arg[0]:match("^(.*)/[^/]*$") or "."
dofile(dir .. "/_path.lua")
local cuasync = require("cuasync")
local copy = require("cuasync.kernels.copy")
local o = dofile(dir .. "/_args.lua")({ bytes = 2 ^ 30, stages = "10", chunk = "4096", inflight = tostring(copy.INFLIGHT),
  reps = 10, rounds = 5, store_lag = 1 },
  "tma_copy.lua [--bytes N] [--stages 2,4,10] [--chunk 4096,16384] [--inflight 40960] [--store_lag N] [--reps N] [--rounds N]")
local function list(s) local t = {} for x in tostring(s):gmatch("%d+") do t[#t + 1] = tonumber(x) end return t end
local cp   -- the buffers, made on first use (a compile worker never touches the GPU)
local function buffers() cp = cp or dofile(dir .. "/_copy.lua")(o.bytes) return cp end
local function opts(p) return { stages = p.stages, chunk = p.chunk, inflight = p.inflight, store_lag = o.store_lag } end

local S = cuasync.sweep{
  name = "tma_copy", order = { "stages", "chunk", "inflight" }, rounds = o.rounds, reps = o.reps,
  params = { stages = list(o.stages), chunk = list(o.chunk), inflight = list(o.inflight) },
  where = function(p) local ok, err = pcall(copy.program, opts(p)) return ok, err end,
  program = function(p) return copy.program(opts(p)) end,
  build = function(p) local c = buffers() return copy.build(opts(p), { dst = c.dst, src = c.src, bytes = o.bytes }) end,
  baseline = { name = "cuMemcpyDtoD", run = function() buffers().base.run() end, bytes = 2 * o.bytes },
}
S:run():print()
