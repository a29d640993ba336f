-- Drivers for the project's copy kernels (kernels-src/copy_bulk.cu): the bulk-copy rules checked
-- in Lua before launch, the grid sized from the device, and the launch prepared once per shape.
local program = require("cuasync.program")
local device = require("cuasync.device")
local rules = require("cuasync.model.launch_rules")
local ring = require("cuasync.model.ring")
local buffer = require("cuasync.buffer")
local stream = require("cuasync.stream")
local util = require("cuasync.util")
local ffi = require("ffi")
local bit = require("bit")

local M = {}

local function fail(msg) util.fail("copy", msg) end

-- cp.async.bulk: size a multiple of 16, global addresses 16-byte aligned.
function M.check_bulk(bytes, dst, src)
  util.count("copy", "bytes", bytes)
  if bytes % 16 ~= 0 then
    fail(("bytes = %d is not a multiple of 16 (cp.async.bulk moves 16-byte units)"):format(bytes))
  end
  for _, x in ipairs({ { "dst", (buffer.memory("copy", "dst", dst)) }, { "src", (buffer.memory("copy", "src", src)) } }) do
    local a = tonumber(ffi.cast("uint64_t", x[2]) % 16)
    if a ~= 0 then
      fail(("%s address 0x%x is not 16-byte aligned (cp.async.bulk needs 16-byte aligned global addresses)"):format(
           x[1], tonumber(ffi.cast("uint64_t", x[2]))))
    end
  end
end

local Bulk = {}
Bulk.__index = Bulk

-- Shared-memory ring bytes per SM that the grid aims for. Measured on the H200 (1 GiB copies,
-- 4 KiB chunks, ratios to cuMemcpyDtoD): 32 KiB 0.92, 40 KiB 0.96, 48 KiB 0.94, 56 KiB 0.93,
-- a full SM (~200 KiB) 0.92. More bytes in flight than the memory system needs costs DRAM
-- efficiency; fewer leaves it idle. The old grid (as many blocks as fit) plateaued at 0.92.
M.INFLIGHT = 40 * 1024

-- copy.bulk_kernel{ stages = 10, chunk = 4096, store_lag = 1, inflight = 40960, watchdog = nil }
--   -> an object with :grid/:prepare/:copy (watchdog as cuasync.program's field)
-- copy.bulk_program(opts) -> the checked program (not compiled), and the ring's fields: what a
-- sweep prunes and compiles with. Raises as bulk_kernel does for options that cannot work.
function M.bulk_program(opts)
  opts = opts or {}
  util.kind("copy", "opts", opts, "table")
  util.known_fields("copy", opts, { stages = true, chunk = true, store_lag = true, inflight = true, watchdog = true }, 2)
  local stages = util.count("copy", "stages", opts.stages or 10)
  local chunk = util.count("copy", "chunk", opts.chunk or 4096)
  local lag = util.count("copy", "store_lag", opts.store_lag or 1, true)
  local inflight = util.count("copy", "inflight", opts.inflight or M.INFLIGHT)
  if stages > 64 then fail(("stages = %d exceeds 64"):format(stages)) end
  if chunk % 16 ~= 0 then
    fail(("chunk = %d is not a multiple of 16 (cp.async.bulk moves 16-byte units)"):format(chunk))
  end
  local limits = rules.limits_of(device.peek())
  -- the data ring is dynamic shared memory; the kernel's barriers are static, one per stage
  local r = ring.plan{ where = "copy", stages = stages, stage_bytes = chunk, align = 16 }
  ring.fit(r, limits.smem_optin, "copy", "stages * chunk", stages * ring.BARRIER_BYTES)
  local prog = program.new{ file = "copy_bulk.cu", defines = { STAGES = stages, CHUNK = chunk, STORE_LAG = lag },
                            watchdog = opts.watchdog }
  return prog, { stages = stages, chunk = chunk, smem = stages * chunk, inflight = inflight }
end

-- copy.program(opts): the driver shape's name for bulk_program's program.
function M.program(opts) return (M.bulk_program(opts)) end

function M.bulk_kernel(opts)
  local prog, k = M.bulk_program(opts)
  k.module = prog:compile()
  return setmetatable(k, Bulk)
end

function Bulk:kernel()
  self.k = self.k or self.module:kernel("copy_bulk", "ptr, ptr, u64")
  return self.k
end

-- Blocks per SM: as many rings as fit in `inflight` bytes (at least one), never more than can be
-- resident; times the SMs, and never more blocks than chunks. Returns grid, blocks per SM.
function Bulk:grid(bytes)
  local k = self:kernel()
  local resident = k:occupancy(32, self.smem)
  if resident == 0 then
    fail(("%d stages of %d bytes cannot be resident on this device"):format(self.stages, self.chunk))
  end
  local per_sm = math.min(resident, math.max(1, math.floor(self.inflight / self.smem)))
  local chunks = math.ceil(bytes / self.chunk)
  return math.min(chunks, per_sm * k.device.sms), per_sm
end

-- :prepare(dst, src, bytes[, { grid = n, stream = s }]) -> run()
function Bulk:prepare(dst, src, bytes, opts)
  M.check_bulk(bytes, dst, src)
  opts = opts or {}
  local grid = opts.grid or self:grid(bytes)
  return (self:kernel():prepare({ grid = grid, block = 32, smem = self.smem, stream = opts.stream }, dst, src, bytes))
end

function Bulk:copy(dst, src, bytes, opts)
  self:prepare(dst, src, bytes, opts)()
end

-- copy.build(opts, { dst = buf, src = buf, bytes = n[, grid, stream] }) -> { run, verify, poison,
-- bytes }: the driver shape a sweep's build returns. bytes: read + written; verify() compares
-- dst with src byte for byte (both downloaded).
function M.build(opts, b)
  util.kind("copy", "buffers", b, "table")
  util.known_fields("copy", b, { dst = true, src = true, bytes = true, grid = true, stream = true }, "buffers")
  local k = M.bulk_kernel(opts)
  local run = k:prepare(b.dst, b.src, b.bytes, { grid = b.grid, stream = b.stream })
  local function verify()
    stream.synchronize()
    -- bytes is a multiple of 16 (check_bulk): compared in 8-byte words
    local words = b.bytes / 8
    local got, want = b.dst:download("uint64_t", words), b.src:download("uint64_t", words)
    for i = 0, words - 1 do
      if got[i] ~= want[i] then
        return false, ("copy: bytes %d..%d are 0x%s, expected 0x%s"):format(8 * i, 8 * i + 7, bit.tohex(got[i]), bit.tohex(want[i]))
      end
    end
    return true
  end
  -- the output poisoned (buf:poison: a NaN no copy of real data holds), on the run's stream
  return { run = run, verify = verify, poison = function() b.dst:poison(b.stream) end, bytes = 2 * b.bytes, kernel = k }
end

return M
