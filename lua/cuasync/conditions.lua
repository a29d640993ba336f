-- The GPU's conditions now, read through NVML (native/cuasync_nvml.c: libnvidia-ml.so.1, or
-- $CUASYNC_NVML_LIB, opened at first use and never linked): SM and memory clocks, power,
-- temperature and the reasons the clocks are held down. Optional like the driver: without NVML a
-- sample is `nil, why`, and nothing else changes. What the samples say (reason names, a summary
-- row) is model/conditions.lua's.
--   local s = cuasync.conditions([dev])    -- or .sample(dev): the device found by its PCI bus id
--   s = { sm_mhz, mem_mhz, power_w, temp_c, reasons = { "sw_power_cap", ... }, power_limit_w,
--         max_sm_mhz, max_mem_mhz, missing = { power = "nvmlDeviceGetPowerUsage: Not Supported (3)" } }
--   cuasync.conditions.sample_index(i)    -- NVML's index i (its order, not CUDA's; no CUDA needed)
--   cuasync.conditions.available()        --> true | false, why
--   cuasync.conditions.summarize(samples) --> one row (model/conditions.lua)
local ffi = require("ffi")
local bit = require("bit")
local native = require("cuasync.native")
local util = require("cuasync.util")
local device = require("cuasync.device")
local model = require("cuasync.model.conditions")
require("cuasync.cdef.core")
require("cuasync.cdef.nvml")
require("cuasync.cdef.device")

local C, errbuf, ERRLEN = native.C, native.errbuf, native.ERRLEN

local M = { REASONS = model.REASONS, summarize = model.summarize }

-- true once NVML is loaded and initialised; false and why (a sentence: "NVML not available:
-- libnvidia-ml.so.1 not found (CUASYNC_NVML_LIB)") where it is not. Never raises; remembered for
-- the process, as the driver's load is.
function M.available()
  if C.cuasync_nvml_init(errbuf, ERRLEN) ~= 0 then return false, ffi.string(errbuf) end
  return true
end

-- The C field each sample field is read from, where it is not the same name, and its scale.
local RAW = { power_w = { "power_mw", 1000 }, power_limit_w = { "power_limit_mw", 1000 } }

local function bits_of(mask)
  local bits = {}
  for i = 0, 63 do
    if bit.band(bit.rshift(mask, i), 1ULL) ~= 0ULL then bits[#bits + 1] = i end
  end
  return bits
end

-- The sample table of a filled cuasync_conditions: the fields read, `missing` for the others.
local function sample_of(raw)
  local s, missing = {}, nil
  for i = 0, C.CUASYNC_COND_FIELDS - 1 do
    local key = ffi.string(C.cuasync_nvml_field_name(i))
    local field = model.FIELDS[key]
    if bit.band(raw.have, bit.lshift(1, i)) ~= 0 then
      if field == "reasons" then
        s.reasons = model.reason_names(bits_of(raw.reasons))
      else
        local from = RAW[field] or { field, 1 }
        s[field] = tonumber(raw[from[1]]) / from[2]
      end
    else
      missing = missing or {}
      missing[key] = ffi.string(raw.why[i])
    end
  end
  s.missing = missing
  return s
end

-- rc of cuasync_nvml_sample: a table; nil and why where NVML is not there or has no such device;
-- a raise for anything else (a bad argument reaching C).
local function result(where, rc, raw)
  if rc == 0 then return sample_of(raw) end
  if rc == C.CUASYNC_E_NONVML or rc == C.CUASYNC_E_NVML then return nil, ffi.string(errbuf) end
  return native.check_as(where, rc)
end

-- PCI bus ids by device ordinal, read once (they do not change while the process runs).
local bus_ids = {}

local function bus_id(dev)
  local id = bus_ids[dev.ordinal]
  if not id then
    local out = ffi.new("char[64]")
    native.check_as("conditions", C.cuasync_device_pci_bus_id(dev.ordinal, out, 64, errbuf, ERRLEN))
    id = ffi.string(out)
    bus_ids[dev.ordinal] = id
  end
  return id
end

-- The conditions of dev (a device from cuasync.device(n); default the current device), found in
-- NVML by its PCI bus id. A table, or nil and why.
function M.sample(dev)
  util.not_null("conditions", "dev", dev, "a device")
  if dev == nil then dev = device.current() end
  if type(dev) ~= "table" or not util.is_integer(dev.ordinal) then
    util.fail("conditions", ("dev must be a device from cuasync.device(n) (got %s)"):format(util.describe(dev)))
  end
  local id = bus_id(dev)
  local raw = ffi.new("cuasync_conditions")
  return result("conditions", C.cuasync_nvml_sample(id, 0, raw, errbuf, ERRLEN), raw)
end

-- The conditions of NVML's device i (NVML's order, which can differ from CUDA's): needs no CUDA
-- driver. A table, or nil and why.
function M.sample_index(i)
  util.int_in("conditions.sample_index", "i", i, 0, 2 ^ 31 - 1)
  local raw = ffi.new("cuasync_conditions")
  return result("conditions.sample_index", C.cuasync_nvml_sample(nil, i, raw, errbuf, ERRLEN), raw)
end

-- Failures deep inside (no driver) name the call the user made.
util.public[M.sample] = "conditions"
util.public[M.sample_index] = "conditions.sample_index"
util.public[M.available] = "conditions.available"
util.public[M.summarize] = "conditions.summarize"

-- cuasync.conditions(dev) is cuasync.conditions.sample(dev).
return setmetatable(M, { __call = function(_, dev) return M.sample(dev) end })
