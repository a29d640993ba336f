-- cuasync: Hopper async copies, barriers, pipelines, tensor maps and cluster launches from LuaJIT.
-- This file only assembles the submodules; each public name is documented where it is defined.
local native = require("cuasync.native")
local device = require("cuasync.device")
local buffer = require("cuasync.buffer")
local program = require("cuasync.program")
local streams = require("cuasync.stream")
local bench = require("cuasync.bench")
local cache = require("cuasync.cache")
local launchcfg = require("cuasync.launchcfg")
local signature = require("cuasync.signature")
local copy = require("cuasync.copy")
local patterns = require("cuasync.patterns")
local tensormap = require("cuasync.tensormap")
local swizzle = require("cuasync.swizzle")

local C = native.C

local M = {
  version = native.version,
  library = native.path,

  available = device.available,
  device = device.open,
  device_count = device.count,
  current_device = device.current,

  alloc = buffer.alloc,
  host_alloc = buffer.host_alloc,

  program = program.new,
  kernels_dir = program.kernels_dir,
  signature = signature.parse,
  check_launch = launchcfg.check,
  limits = { sm_90 = launchcfg.sm_90 },

  stream = streams.stream,
  event = streams.event,
  bench = bench.bench,
  median = bench.median,
  bench_rounds = bench.rounds,
  copy = copy,
  patterns = patterns,
  tensormap = tensormap.new,
  swizzle = swizzle,
  cache = { stats = cache.stats, dir = cache.dir, clear_memory = cache.clear_memory },
}

-- Wait for all work on the current device; asynchronous kernel faults surface here.
function M.synchronize(what)
  device.current():synchronize(what)
end

-- Host monotonic clock in nanoseconds.
function M.now_ns()
  return C.cuasync_now_ns()
end

-- A resolved driver entry point, cast to a ctype: for side-by-side raw-FFI comparisons.
function M.driver_symbol(name, ctype)
  device.current()
  local p = C.cuasync_driver_symbol(name)
  if p == nil then error(("cuasync.driver_symbol: %s is not resolved"):format(tostring(name)), 2) end
  return ctype and require("ffi").cast(ctype, p) or p
end

return M
