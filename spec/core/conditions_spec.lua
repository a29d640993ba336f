-- cuasync.conditions: clocks, power, temperature and clock-event reasons through NVML, read from a
-- fake libnvidia-ml (spec/support/fake_nvml.c, built here, chosen with CUASYNC_NVML_LIB) whose
-- values and failures the environment sets. NVML's load is remembered per process, as the
-- driver's is: each case runs in a child process.
local H = require("helper")
local cuasync = require("cuasync")
local json = require("cuasync.json")
local ffi = require("ffi")

-- The fake, built once per run: "new" (every entry point), "old" (the reasons only under their
-- older Throttle name, no optional entry points), "ancient" (no reasons call at all).
local libs
local function fake(kind)
  if not libs then
    local dir = H.tmpdir()
    libs = {}
    for name, flag in pairs({ new = "", old = "-DFAKE_NVML_OLD", ancient = "-DFAKE_NVML_ANCIENT" }) do
      libs[name] = dir .. "/" .. name .. "-libnvidia-ml.so"
      local out, rc = H.sh(("cc -shared -fPIC -std=c99 -Wall %s -o %s spec/support/fake_nvml.c"):format(flag, libs[name]))
      assert(rc == 0, out)
    end
  end
  return libs[kind or "new"]
end

-- Run code in a child where show(s, why) prints one JSON line; returns the decoded lines and
-- the whole output.
local function child(code, env)
  local ok, out = H.luajit([[
    local c = require("cuasync")
    local json = require("cuasync.json")
    function show(s, why) print(json.encode({ s = s or false, why = why or false })) end
  ]] .. code, env)
  assert.is_true(ok, out)
  local lines = {}
  for line in out:gmatch("[^\n]+") do
    if line:match("^[{%[]") then lines[#lines + 1] = json.decode(line) end
  end
  return lines, out
end

local FULL = { sm_mhz = 1500, mem_mhz = 2619, power_w = 312.5, temp_c = 47, reasons = {}, power_limit_w = 700,
               max_sm_mhz = 1980, max_mem_mhz = 3201 }

local function with(t, changes)
  local out = {}
  for k, v in pairs(t) do out[k] = v end
  for k, v in pairs(changes) do if v == false then out[k] = nil else out[k] = v end end
  return out
end

describe("cuasync.conditions", function()
  it("says NVML is missing, as a sentence naming the library and the variable, every time", function()
    local missing = H.missing("libnvidia-ml.so.1")
    local lines = child([[
      print(json.encode({ c.conditions.available() }))
      show(c.conditions.sample_index(0))
      show(c.conditions.sample_index(0))
    ]], { CUASYNC_NVML_LIB = missing })
    local why = "NVML not available: " .. missing .. " not found (CUASYNC_NVML_LIB)"
    assert.same({ false, why }, lines[1])
    assert.same({ s = false, why = why }, lines[2])
    assert.same({ s = false, why = why }, lines[3])
  end)

  it("names libnvidia-ml.so.1 where no override is set and the machine has none", function()
    local ok, why = cuasync.conditions.available()
    if not ok and why:find("libnvidia-ml.so.1", 1, true) then
      assert.equal("NVML not available: libnvidia-ml.so.1 not found (CUASYNC_NVML_LIB)", why)
    end
  end)

  it("reports nvmlInit_v2's failure with NVML's text and code, and tries it once per process", function()
    local log = H.tmpdir() .. "/calls"
    local lines = child([[
      show(c.conditions.sample_index(0))
      print(json.encode({ c.conditions.available() }))
    ]], { CUASYNC_NVML_LIB = fake(), FAKE_NVML_NOINIT = "1", FAKE_NVML_LOG = log })
    local why = "NVML not available: nvmlInit_v2: Driver Not Loaded (9)"
    assert.same({ s = false, why = why }, lines[1])
    assert.same({ false, why }, lines[2])
    assert.equal("nvmlInit_v2\n", H.read(log))
  end)

  it("reads every field of a device by NVML index, initialising NVML once", function()
    local log = H.tmpdir() .. "/calls"
    local lines = child([[
      print(json.encode({ c.conditions.available() }))
      show(c.conditions.sample_index(0))
      show(c.conditions.sample_index(1))
    ]], { CUASYNC_NVML_LIB = fake(), FAKE_NVML_LOG = log })
    assert.same({ true }, lines[1])
    assert.same({ s = FULL, why = false }, lines[2])
    assert.same({ s = with(FULL, { sm_mhz = 1501 }), why = false }, lines[3])
    local _, inits = H.read(log):gsub("nvmlInit_v2\n", "")
    assert.equal(1, inits)
  end)

  it("keeps the other fields where one call fails, and names the call in missing", function()
    local lines = child([[
      show(c.conditions.sample_index(0))
      print(require("cuasync.native").message())
    ]], { CUASYNC_NVML_LIB = fake(), FAKE_NVML_FAIL = "nvmlDeviceGetPowerUsage" })
    local want = with(FULL, { power_w = false, missing = { power = "nvmlDeviceGetPowerUsage: Not Supported (3)" } })
    assert.same({ s = want, why = false }, lines[1])
    -- two failing: both named, each under its field
    lines = child([[ show(c.conditions.sample_index(1)) ]],
      { CUASYNC_NVML_LIB = fake(), FAKE_NVML_FAIL = "nvmlDeviceGetTemperature,nvmlDeviceGetClockInfo" })
    assert.same({ s = with(FULL, { sm_mhz = false, mem_mhz = false, temp_c = false, missing = {
      sm = "nvmlDeviceGetClockInfo: Not Supported (3)", mem = "nvmlDeviceGetClockInfo: Not Supported (3)",
      temp = "nvmlDeviceGetTemperature: Not Supported (3)" } }), why = false }, lines[1])
  end)

  it("puts the first failing field in the error buffer, as 'field: why', and still returns OK", function()
    local ok, out = H.luajit([[
      local native = require("cuasync.native")
      require("cuasync.cdef.nvml")
      local raw = require("ffi").new("cuasync_conditions")
      local rc = native.C.cuasync_nvml_sample(nil, 0, raw, native.errbuf, native.ERRLEN)
      print(rc, native.message(), raw.have)
    ]], { CUASYNC_NVML_LIB = fake(), FAKE_NVML_FAIL = "nvmlDeviceGetPowerUsage,nvmlDeviceGetTemperature" })
    assert.is_true(ok, out)
    -- every field but power (bit 2) and temp (bit 3)
    assert.equal("0\tpower: nvmlDeviceGetPowerUsage: Not Supported (3)\t" .. (255 - 4 - 8) .. "\n", out)
  end)

  it("names the reasons from NVML's bits, sorted, and an unknown bit by its hex value", function()
    local lines = child([[
      show(c.conditions.sample_index(0))
    ]], { CUASYNC_NVML_LIB = fake(), FAKE_NVML_REASONS = "0x24" })
    assert.same({ "sw_power_cap", "sw_thermal_slowdown" }, lines[1].s.reasons)
    lines = child([[ show(c.conditions.sample_index(0)) ]],
      { CUASYNC_NVML_LIB = fake(), FAKE_NVML_REASONS = "0x80000000000003ff" })
    assert.same({ "0x200", "0x8000000000000000", "applications_clocks_setting", "display_clock_setting",
                  "gpu_idle", "hw_power_brake_slowdown", "hw_slowdown", "hw_thermal_slowdown", "sw_power_cap",
                  "sw_thermal_slowdown", "sync_boost" }, lines[1].s.reasons)
    assert.equal(9, #cuasync.conditions.REASONS)
  end)

  it("falls back to the older Throttle name, and leaves out what an old NVML lacks", function()
    local log = H.tmpdir() .. "/calls"
    local lines, out = child([[ show(c.conditions.sample_index(0)) ]],
      { CUASYNC_NVML_LIB = fake("old"), FAKE_NVML_REASONS = "0x4", FAKE_NVML_LOG = log, CUASYNC_TRACE = "1" })
    local too_old = "nvmlDeviceGetMaxClockInfo not found (NVML too old)"
    assert.same({ s = with(FULL, { reasons = { "sw_power_cap" }, power_limit_w = false, max_sm_mhz = false,
      max_mem_mhz = false, missing = { power_limit = "nvmlDeviceGetEnforcedPowerLimit not found (NVML too old)",
      max_sm = too_old, max_mem = too_old } }), why = false }, lines[1])
    assert.truthy(H.read(log):find("nvmlDeviceGetCurrentClocksThrottleReasons\n", 1, true))
    assert.truthy(out:find('cuasync: dlsym("nvmlDeviceGetCurrentClocksEventReasons"): not found', 1, true), out)
    assert.truthy(out:find("cuasync: nvmlInit_v2(): 0", 1, true), out)
  end)

  it("refuses an NVML with no reasons call at all: too old, by name", function()
    local lines = child([[ show(c.conditions.sample_index(0)) ]], { CUASYNC_NVML_LIB = fake("ancient") })
    assert.same({ s = false, why = "NVML too old: nvmlDeviceGetCurrentClocksEventReasons not found, nor "
      .. "nvmlDeviceGetCurrentClocksThrottleReasons (in " .. fake("ancient") .. ")" }, lines[1])
  end)

  it("says which device NVML does not have", function()
    local lines = child([[ show(c.conditions.sample_index(5)) ]], { CUASYNC_NVML_LIB = fake() })
    assert.same({ s = false, why = "nvmlDeviceGetHandleByIndex_v2: Invalid Argument (2) while finding NVML device 5" }, lines[1])
  end)

  it("finds a device by the PCI bus id CUDA writes (a 4-digit domain)", function()
    local ok, out = H.luajit([[
      local native = require("cuasync.native")
      require("cuasync.cdef.nvml")
      local raw = require("ffi").new("cuasync_conditions")
      print(native.C.cuasync_nvml_sample("0000:11:00.0", 0, raw, native.errbuf, native.ERRLEN), raw.sm_mhz)
      print(native.C.cuasync_nvml_sample("0000:99:00.0", 0, raw, native.errbuf, native.ERRLEN) == native.C.CUASYNC_E_NVML,
            native.message())
    ]], { CUASYNC_NVML_LIB = fake() })
    assert.is_true(ok, out)
    assert.equal("0\t1501\ntrue\tnvmlDeviceGetHandleByPciBusId_v2: Not Found (6) while finding the NVML device at "
                 .. "PCI bus id 0000:99:00.0\n", out)
  end)

  it("refuses what is not a device or an index, naming the call", function()
    assert.has.error(function() cuasync.conditions.sample_index(-1) end,
      "cuasync.conditions.sample_index: i must be an integer in 0..2147483647 (got -1)")
    assert.has.error(function() cuasync.conditions.sample("gpu0") end,
      'cuasync.conditions: dev must be a device from cuasync.device(n) (got "gpu0")')
    assert.has.error(function() cuasync.conditions({ name = "x" }) end,
      "cuasync.conditions: dev must be a device from cuasync.device(n) (got a table with name)")
  end)

  it("needs the driver for a CUDA device, and says so by the call", function()
    local ok, out = H.luajit([[
      local ok, err = pcall(require("cuasync").conditions)
      print(err)
    ]], { CUASYNC_CUDA_LIB = H.missing("libcuda.so.1"), CUASYNC_NVML_LIB = fake() })
    assert.is_true(ok, out)
    assert.truthy(out:find("cuasync.conditions: no CUDA driver: " .. H.missing("libcuda.so.1"), 1, true), out)
  end)

  it("shares its struct's layout with the C header", function()
    local dir = H.tmpdir()
    H.write(dir .. "/l.c", [[
      #include <stdio.h>
      #include <stddef.h>
      #include "cuasync_nvml.h"
      int main(void) { printf("%zu %zu %zu %zu\n", sizeof(cuasync_conditions), offsetof(cuasync_conditions, reasons),
                              offsetof(cuasync_conditions, status), offsetof(cuasync_conditions, why)); return 0; }
    ]])
    local out, rc = H.sh(("cc -std=c99 -Inative -o %s/l %s/l.c && %s/l"):format(dir, dir, dir))
    assert.equal(0, rc, out)
    require("cuasync.cdef.nvml")
    assert.equal(("%d %d %d %d\n"):format(ffi.sizeof("cuasync_conditions"), ffi.offsetof("cuasync_conditions", "reasons"),
      ffi.offsetof("cuasync_conditions", "status"), ffi.offsetof("cuasync_conditions", "why")), out)
  end)

  describe("summarize", function()
    local summarize = cuasync.conditions.summarize

    it("is one row: median clocks, min and max SM clock, mean power, max temperature, the reasons' union", function()
      local row = summarize({
        { sm_mhz = 1980, mem_mhz = 2619, power_w = 300, temp_c = 40, reasons = {} },
        { sm_mhz = 1500, mem_mhz = 2619, power_w = 690, temp_c = 71, reasons = { "sw_power_cap" } },
        { sm_mhz = 1620, mem_mhz = 2600, power_w = 600, temp_c = 65, reasons = { "sw_power_cap", "hw_slowdown" },
          power_limit_w = 700, max_sm_mhz = 1980 },
      })
      assert.same({ n = 3, sm_mhz = 1620, sm_mhz_min = 1500, sm_mhz_max = 1980, mem_mhz = 2619, power_w = 530,
                    temp_c = 71, reasons = { "hw_slowdown", "sw_power_cap" }, power_limit_w = 700, max_sm_mhz = 1980 }, row)
      -- an even count: the median is the middle two's mean
      assert.equal(1750, summarize({ { sm_mhz = 1500 }, { sm_mhz = 2000 }, { sm_mhz = 1700 }, { sm_mhz = 1800 } }).sm_mhz)
    end)

    it("takes each field over the samples that have it; missing only where none has", function()
      local row = summarize({
        { sm_mhz = 1500, missing = { power = "nvmlDeviceGetPowerUsage: Not Supported (3)", temp = "t: x (1)" } },
        { sm_mhz = 1700, temp_c = 50, missing = { power = "nvmlDeviceGetPowerUsage: Not Supported (3)" } },
      })
      assert.same({ n = 2, sm_mhz = 1600, sm_mhz_min = 1500, sm_mhz_max = 1700, temp_c = 50,
                    missing = { power = "nvmlDeviceGetPowerUsage: Not Supported (3)" } }, row)
    end)

    it("refuses an empty list and what is not a sample", function()
      assert.has.error(function() summarize({}) end, "cuasync.conditions.summarize: samples is empty")
      assert.has.error(function() summarize({ 1 }) end,
        "cuasync.conditions.summarize: samples[1] must be a table (a sample of cuasync.conditions; got 1)")
      assert.has.error(function() summarize({ { sm_mhz = "fast" } }) end,
        'cuasync.conditions.summarize: samples[1].sm_mhz must be a number (got "fast")')
      assert.has.error(function() summarize("x") end, "cuasync.conditions.summarize: samples must be a table (got string)")
    end)
  end)

  local gpu_it = H.gpu_it(it, pending)
  gpu_it("samples the current device: a running SM clock, a sane temperature, power drawn #gpu", function()
    local s, why = cuasync.conditions(cuasync.current_device())
    assert.truthy(s, why)
    assert.is_true(s.sm_mhz > 0, tostring(s.sm_mhz))
    assert.is_true(s.temp_c >= 10 and s.temp_c <= 110, tostring(s.temp_c))
    assert.is_true(s.power_w > 0, tostring(s.power_w))
    assert.equal("table", type(s.reasons))
    local row = cuasync.conditions.summarize({ s, cuasync.conditions.sample() })
    assert.equal(2, row.n)
  end)
end)
