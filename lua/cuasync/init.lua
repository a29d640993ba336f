-- cuasync: Hopper async copies, barriers, pipelines, tensor maps and cluster launches from LuaJIT.
-- This file only assembles the submodules; each public name is documented where it is defined.
-- The core (lua/cuasync/*.lua) never requires tools/ or kernels/: their names below load on first
-- use, so `require("cuasync")` stays the core alone.
local native = require("cuasync.native")
local device = require("cuasync.device")
local buffer = require("cuasync.buffer")
local program = require("cuasync.program")
local streams = require("cuasync.stream")
local cache = require("cuasync.cache")
local rules = require("cuasync.model.launch_rules")
local signature = require("cuasync.signature")
local tensormap = require("cuasync.tensormap")
local swizzle = require("cuasync.model.swizzle")
local util = require("cuasync.util")

local C, errbuf, ERRLEN = native.C, native.errbuf, native.ERRLEN

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
  check_launch = rules.check,
  limits = { sm_90 = rules.sm_90 },

  stream = streams.stream,
  event = streams.event,
  tensormap = tensormap.new,
  pipeline = require("cuasync.pipeline").new,
  swizzle = swizzle,
  model = { swizzle = swizzle, launch_rules = rules, ring = require("cuasync.model.ring"),
            clusters = require("cuasync.model.clusters"),
            tensormap_rules = require("cuasync.model.tensormap_rules"),
            mbarrier = require("cuasync.model.mbarrier"), run = require("cuasync.model.protocol").run,
            pipeline_plan = require("cuasync.model.pipeline_plan") },
  cache = { stats = cache.stats, dir = cache.dir, clear_memory = cache.clear_memory },
  is_driver_error = native.is_driver_error,
}

-- Loaded on first use (tools/ and kernels/ sit above the core).
local LAZY = {
  bench = function() return require("cuasync.tools.bench").bench end,
  median = function() return require("cuasync.tools.bench").median end,
  bench_rounds = function() return require("cuasync.tools.bench").rounds end,
  isolate = function() return require("cuasync.tools.isolate") end,
  copy = function() return require("cuasync.kernels.copy") end,
  patterns = function() return require("cuasync.kernels.patterns") end,
  gemm = function() return require("cuasync.kernels.gemm") end,
  sweep = function() return require("cuasync.tools.sweep") end,
  nvtx = function() return require("cuasync.tools.nvtx") end,
}
setmetatable(M, { __index = function(t, k)
  local f = LAZY[k]
  if not f then return nil end
  local v = f()
  rawset(t, k, v)
  return v
end })

-- Wait for all work on the current device; asynchronous kernel faults, and the hang of a
-- watched kernel, surface here. synchronize{ timeout_ms = n } raises "still running" instead of
-- blocking past n ms (it polls events recorded on the default stream and on every open stream).
function M.synchronize(what)
  if type(what) == "table" then
    local ms = streams.timeout("synchronize", what)
    local dev = device.current()
    local events = {}
    for _, s in ipairs(streams.live()) do events[#events + 1] = streams.event():record(s) end
    events[#events + 1] = streams.event():record(nil)
    streams.poll("synchronize", ms, "kernels or copies on the device", function()
      for _, e in ipairs(events) do if not e:query() then return false end end
      return true
    end)
    for _, e in ipairs(events) do e:close() end
    return dev:synchronize()
  end
  if what ~= nil then util.cstring("synchronize", "what", what) end
  device.current():synchronize(what)
end

-- Reset the current device's primary context: everything in it is freed and a new one is made
-- current. Every buffer, module view, stream and event made before it is marked dead and refuses
-- use; kernels must be taken again from their module (modules reload on first use). After a
-- sticky error (a trap, an illegal address) the driver makes no new context in this process
-- (measured on the H200, driver 580): reset() still marks everything dead and then says so.
function M.reset()
  local dev = device.peek()
  if not dev then util.fail("reset", "no device is open") end
  local rc = C.cuasync_device_reset(dev.ordinal, errbuf, ERRLEN)
  native.state.generation = native.state.generation + 1
  require("cuasync.handle").forget_all("was lost with cuasync.reset()")
  require("cuasync.watchdog").forget_all()
  if rc ~= 0 then
    local _, err = pcall(native.check, rc)
    util.fail("reset", ("the driver made no new context for device %d after the reset (%s): after a sticky error only a new process uses the GPU again; run kernels that may fault under cuasync.isolate"):format(
      dev.ordinal, tostring(err):gsub(";.*$", "")))
  end
end

M.is_hang = function(e) return require("cuasync.watchdog").is_hang(e) end

-- Host monotonic clock in nanoseconds.
function M.now_ns()
  return C.cuasync_now_ns()
end

-- A resolved driver entry point, cast to a ctype: for side-by-side raw-FFI comparisons.
function M.driver_symbol(name, ctype)
  util.cstring("driver_symbol", "name", name)
  device.current()
  local p = C.cuasync_driver_symbol(name)
  if p == nil then util.fail("driver_symbol", ("%s is not resolved"):format(util.describe(name))) end
  if ctype == nil then return p end
  local ffi = require("ffi")
  local ok, ct = pcall(ffi.typeof, ctype)
  if not ok then util.fail("driver_symbol", ("ctype %s is not a C type"):format(util.describe(ctype))) end
  return ffi.cast(ct, p)
end

return M
