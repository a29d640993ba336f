-- Drivers for the cp.async pipeline kernels: kernels-src/cp_async_copy.cu built from a
-- cuasync.pipeline plan (a streaming copy, or a gather of rows through an index array), and its
-- two yardsticks: the same copy written by hand on pipeline_ring (cp_async_ring.cu) and through
-- libcu++'s cuda::pipeline (cp_async_cxx.cu), each copying `vector` bytes at a time. The driver
-- shape of kernels/*:
--   cp_async.plan(opts) -> the plan; cp_async.program(opts) -> the checked program (no GPU);
--   cp_async.build(opts, { dst, src, bytes[, idx, expect, grid] }) -> { run, verify, poison, bytes }
-- opts = { impl = "plan" | "ring" | "cxx", work = "copy" | "gather", stages = 4, tile = 16384,
--          vector = 16, completion = "mbarrier" | "group", producer = "all" | { warps = n } |
--          { threads = n }, consumer_warps = 8 (unified) or 4, row = 256 (gather), watchdog,
--          release = "thread" | "warp" (the plan's; default warp), align = 128 | 16 (the
--          yardsticks' ring start: 16 keeps the layout as declared; a plan derives its own),
--          trace (the program's: a timeline of the launch, read with build(...).kernel:trace()) }
local pipeline = require("cuasync.pipeline")
local program = require("cuasync.program")
local device = require("cuasync.device")
local stream = require("cuasync.stream")
local util = require("cuasync.util")
local ffi = require("ffi")
local bit = require("bit")
pcall(ffi.cdef, "int memcmp(const void *a, const void *b, size_t n);")

local M = {}
local FIELDS = { impl = true, work = true, stages = true, tile = true, vector = true, completion = true, producer = true,
                 consumer_warps = true, row = true, watchdog = true, planted = true, zero_fill = true,
                 release = true, align = true, trace = true }
M.THREADS = 256   -- the yardsticks' block, and a unified plan's

local function fail(msg) util.fail("cp_async", msg) end

local function options(opts)
  opts = opts or {}
  util.kind("cp_async", "opts", opts, "table")
  util.known_fields("cp_async", opts, FIELDS, 3)
  local o = { impl = opts.impl or "plan", work = opts.work or "copy", stages = opts.stages or 4, tile = opts.tile or 16384,
              vector = opts.vector or 16, completion = opts.completion, producer = opts.producer or "all",
              row = opts.row or 256, watchdog = opts.watchdog, planted = opts.planted, zero_fill = opts.zero_fill,
              release = opts.release, align = opts.align, trace = opts.trace }
  if o.impl ~= "plan" and o.impl ~= "ring" and o.impl ~= "cxx" then
    fail(('opts.impl must be "plan", "ring" or "cxx" (got %s)'):format(util.describe(o.impl)))
  end
  if o.work ~= "copy" and o.work ~= "gather" then
    fail(('opts.work must be "copy" or "gather" (got %s)'):format(util.describe(o.work)))
  end
  if o.impl ~= "plan" and (o.work ~= "copy" or o.completion or o.producer ~= "all" or o.zero_fill or o.release) then
    fail(("opts.impl = %q is the hand-written streaming copy: work copy, unified, noinc arrivals only"):format(o.impl))
  end
  if o.impl ~= "plan" and (type(o.stages) ~= "number" or o.stages % 1 ~= 0 or o.stages < 1 or o.stages > 64) then
    fail(("opts.stages must be an integer in 1..64 (got %s)"):format(util.describe(o.stages)))
  end
  if o.impl ~= "plan" and o.vector ~= 16 and o.vector ~= 8 and o.vector ~= 4 then
    fail(("opts.vector must be 16, 8 or 4 (got %s)"):format(util.describe(o.vector)))
  end
  if o.impl == "plan" and o.align ~= nil then
    fail("opts.align is the yardsticks' (impl ring or cxx): a plan lays out its own stage buffers (128-byte aligned)")
  end
  if o.align ~= nil and o.align ~= 16 and o.align ~= 128 then
    fail(("opts.align must be 128 or 16 (got %s)"):format(util.describe(o.align)))
  end
  o.align = o.align or 128
  o.consumer_warps = opts.consumer_warps or (o.producer == "all" and M.THREADS / 32 or 4)
  return o
end

-- The plan of opts (impl "plan").
function M.plan(opts)
  local o = options(opts)
  return pipeline.new{ name = "cp", stages = o.stages, completion = o.completion, producer = o.producer,
    consumer = { warps = o.consumer_warps }, release = o.release,
    loads = { { cp_async = o.tile, vector = o.vector, name = "x", row = o.work == "gather" and o.row or nil,
                zero_fill = o.zero_fill } } }
end

function M.program(opts)
  local o = options(opts)
  if o.impl == "plan" then
    return M.plan(opts):program{ file = "cp_async_copy.cu", watchdog = o.watchdog, trace = o.trace,
                                 defines = o.planted and { PLANTED = o.planted } or nil }
  end
  if type(o.tile) ~= "number" or o.tile <= 0 or o.tile % (o.vector * M.THREADS) ~= 0 then
    fail(("tile = %s: the hand-written copies need a multiple of %d x %d = %d bytes (vector x threads)"):format(
      util.describe(o.tile), o.vector, M.THREADS, o.vector * M.THREADS))
  end
  return program.new{ file = o.impl == "ring" and "cp_async_ring.cu" or "cp_async_cxx.cu",
                      defines = { STAGES = o.stages, TILE = o.tile, ALIGN = o.align, VEC = o.vector }, watchdog = o.watchdog,
                      trace = o.trace }
end

-- build(opts, { dst, src, bytes, idx = row indices (gather), expect = host buffer of the result,
--   back = host buffer to download into, grid = blocks }): bytes read + written per run; verify()
--   downloads dst into back and compares it with expect, naming the first wrong word.
function M.build(opts, b)
  local o = options(opts)
  util.kind("cp_async", "buffers", b, "table")
  util.known_fields("cp_async", b, { dst = true, src = true, bytes = true, idx = true, expect = true, back = true, grid = true }, "buffers")
  if (b.expect == nil) ~= (b.back == nil) then fail("buffers.expect and buffers.back go together (verify downloads into back)") end
  local bytes = util.count("cp_async", "buffers.bytes", b.bytes)
  if bytes % o.tile ~= 0 and not (o.zero_fill and o.work == "copy") then
    fail(("buffers.bytes = %d is not a whole number of %d-byte tiles (plan zero_fill = true to pad a last partial tile)"):format(bytes, o.tile))
  end
  if bytes % 16 ~= 0 then fail(("buffers.bytes = %d is not a multiple of 16"):format(bytes)) end
  if o.work == "gather" and b.idx == nil then fail("work = \"gather\" needs buffers.idx (one u32 row index per row)") end
  local tiles = math.ceil(bytes / o.tile)   -- dst holds whole tiles
  local k, block, smem
  local prog = M.program(opts)
  local mod = prog:compile()
  if o.impl == "plan" then
    local P = prog.hooks.plan
    block, smem = P.block, P.smem_bytes
    k = o.work == "copy" and mod:kernel("cp_copy", "ptr, ptr, u64") or mod:kernel("cp_gather", "ptr, ptr, ptr, u64")
  else
    block, smem = M.THREADS, o.stages * o.tile + o.align - 16   -- slack to start the ring on o.align
    k = mod:kernel(o.impl == "ring" and "ring_copy" or "cxx_copy", "ptr, ptr, u64")
  end
  local dev = device.current()
  local per_sm = k:occupancy(block, smem)
  if per_sm == 0 then fail(("%d stages of %d bytes (%d of shared memory) cannot be resident"):format(o.stages, o.tile, smem)) end
  local grid = b.grid or math.min(tiles, dev.sms * math.min(per_sm, 4))
  local cfg = { grid = grid, block = block, smem = smem }
  local run
  if o.impl ~= "plan" then run = k:prepare(cfg, b.dst, b.src, tiles)
  elseif o.work == "copy" then run = k:prepare(cfg, b.dst, b.src, bytes)   -- cp_copy takes the bytes
  else run = k:prepare(cfg, b.dst, b.src, b.idx, tiles) end
  local function verify()
    stream.synchronize()
    if b.expect == nil then return false, "cp_async: no buffers.expect to verify against" end
    local n = tiles * o.tile   -- the whole tiles the kernel writes (a zero-filled tail included)
    b.dst:download_to(b.back, n)
    if ffi.C.memcmp(b.back.ptr, b.expect.ptr, n) == 0 then return true end
    local got, want = ffi.cast("const uint64_t *", b.back.ptr), ffi.cast("const uint64_t *", b.expect.ptr)
    for i = 0, n / 8 - 1 do
      if got[i] ~= want[i] then
        return false, ("cp_async %s: bytes %d..%d are 0x%s, expected 0x%s"):format(o.work, 8 * i, 8 * i + 7, bit.tohex(got[i]), bit.tohex(want[i]))
      end
    end
    return false, ("cp_async %s: the %d bytes differ from the expected ones (memcmp)"):format(o.work, n)
  end
  return { run = run, verify = verify, poison = function() b.dst:poison() end, bytes = 2 * bytes, grid = grid,
           per_sm = per_sm, kernel = k }
end

return M
