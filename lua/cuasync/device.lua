-- Devices: availability, properties, the current device and its launch limits.
local ffi = require("ffi")
local native = require("cuasync.native")
local util = require("cuasync.util")
local watchdog = require("cuasync.watchdog")
local handle = require("cuasync.handle")
local capture = require("cuasync.capture")
local rules = require("cuasync.model.launch_rules")
require("cuasync.cdef.device")
require("cuasync.cdef.loader")

local C, errbuf, ERRLEN = native.C, native.errbuf, native.ERRLEN

local M = {}
local opened = {}     -- ordinal -> device object
local current

local Device = {}
Device.__index = Device

function Device:__tostring()
  return ("cuasync.device(%d): %s, cc %d, %d SMs"):format(self.ordinal, self.name, self.cc, self.sms)
end

-- The limits a launch is checked against before the driver sees it: the fields of
-- cuasync.limits.sm_90, from this device's attributes (per block and per SM).
function Device:limits()
  return {
    max_threads_per_block = self.max_threads_per_block,
    max_block = self.max_block, max_grid = self.max_grid,
    smem_per_block = self.smem_per_block, smem_optin = self.smem_optin,
    cluster = self.cluster, name = self.name, cc = self.cc, reserved_smem_per_block = self.reserved_smem_per_block,
    max_threads_per_sm = self.max_threads_per_sm, max_warps_per_sm = math.floor(self.max_threads_per_sm / self.warp_size),
    max_blocks_per_sm = self.max_blocks_per_sm, regs_per_sm = self.regs_per_sm, smem_per_sm = self.smem_per_sm,
    regs_per_thread = rules.sm_90.regs_per_thread,   -- no driver attribute reports it: ptxas' ceiling
  }
end

function Device:synchronize(what)
  capture.refuse("device.synchronize", "a wait on the host cannot be captured, a graph only records work to replay (wait after G:launch)")
  watchdog.check(C.cuasync_device_synchronize(what or "synchronizing the device", errbuf, ERRLEN), true)
end

function Device:mem_info()
  local free, total = ffi.new("size_t[1]"), ffi.new("size_t[1]")
  native.check(C.cuasync_device_mem_info(free, total, errbuf, ERRLEN))
  return tonumber(free[0]), tonumber(total[0])
end

-- "sm_90a" on compute capability 9.0 (multicast, wgmma and setmaxnreg need the a target), sm_XY elsewhere.
function M.arch_for(cc)
  return cc == 90 and "sm_90a" or ("sm_%d"):format(cc)
end

-- true, or false and the reason. Never raises.
function M.available()
  local rc = C.cuasync_driver_init(errbuf, ERRLEN)
  if rc ~= 0 then return false, ffi.string(errbuf) end
  local n = ffi.new("int[1]")
  rc = C.cuasync_device_count(n, errbuf, ERRLEN)
  if rc ~= 0 then return false, ffi.string(errbuf) end
  if n[0] == 0 then return false, "no CUDA device: the driver reports 0 devices" end
  return true
end

function M.count()
  local n = ffi.new("int[1]")
  native.check(C.cuasync_device_count(n, errbuf, ERRLEN))
  return n[0]
end

function M.open(ordinal)
  ordinal = rawequal(ordinal, nil) and 0 or ordinal   -- a NULL cdata is == nil, but not "not given"
  if not util.is_integer(ordinal) or ordinal < 0 then
    util.fail("device", ("ordinal must be a non-negative integer (got %s)"):format(util.describe(ordinal)))
  end
  local dev = opened[ordinal]
  if dev then
    native.check_as("device", C.cuasync_device_activate(ordinal, errbuf, ERRLEN))
    current = dev
    return dev
  end
  local p = ffi.new("cuasync_device_info")
  native.check_as("device", C.cuasync_device_open(ordinal, p, errbuf, ERRLEN))
  -- the property values under native's names (sms, smem_optin, ...: one list, in cuasync_device.c)
  dev = { ordinal = ordinal, name = ffi.string(p.name), total_mem = tonumber(p.total_mem) }
  for i = 0, p.count - 1 do dev[ffi.string(C.cuasync_device_prop_name(i))] = p.value[i] end
  dev.cc = dev.cc_major * 10 + dev.cc_minor
  dev.arch = M.arch_for(dev.cc)
  dev.cluster = dev.cluster_launch ~= 0
  dev.max_block = { dev.max_block_x, dev.max_block_y, dev.max_block_z }
  dev.max_grid = { dev.max_grid_x, dev.max_grid_y, dev.max_grid_z }
  setmetatable(dev, Device)
  opened[ordinal] = dev
  current = dev
  return dev
end

-- The device work goes to: the last one opened, else device 0.
function M.current()
  return current or M.open(0)
end

-- The current device if one is open, else nil (never opens one: compile-only paths use this).
function M.peek()
  return current
end

-- Reset the current device's primary context: everything in it is freed and a new one is made
-- current. Every buffer, module view, stream and event made before it is marked dead and refuses
-- use; kernels must be taken again from their module (modules reload on first use). After a
-- sticky error (a trap, an illegal address) the driver makes no new context in this process
-- (measured on the H200, driver 580): reset() still marks everything dead and then says so.
function M.reset()
  capture.refuse("reset", "a reset ends the context the capture belongs to (end the function first)")
  local dev = M.peek()
  if not dev then util.fail("reset", "no device is open") end
  local rc = C.cuasync_device_reset(dev.ordinal, errbuf, ERRLEN)
  native.state.generation = native.state.generation + 1
  handle.forget_all("was lost with cuasync.reset()")
  watchdog.forget_all()
  if rc ~= 0 then
    local _, err = pcall(native.check, rc)
    util.fail("reset", ("the driver made no new context for device %d after the reset (%s): after a sticky error only a new process uses the GPU again; run kernels that may fault under cuasync.isolate"):format(
      dev.ordinal, tostring(err):gsub(";.*$", "")))
  end
end

-- The driver's CUDA version (12080 for 12.8), read once.
local driver_version
function M.driver_version()
  if not driver_version then
    local v = ffi.new("int[1]")
    native.check(C.cuasync_driver_version(v, errbuf, ERRLEN))
    driver_version = v[0]
  end
  return driver_version
end

-- A resolved driver entry point, cast to a ctype: for side-by-side raw-FFI comparisons.
function M.driver_symbol(name, ctype)
  util.cstring("driver_symbol", "name", name)
  M.current()
  local p = C.cuasync_driver_symbol(name)
  if p == nil then util.fail("driver_symbol", ("%s is not resolved"):format(util.describe(name))) end
  if ctype == nil then return p end
  local ok, ct = pcall(ffi.typeof, ctype)
  if not ok then util.fail("driver_symbol", ("ctype %s is not a C type"):format(util.describe(ctype))) end
  return ffi.cast(ct, p)
end

return M
