-- Issue 43 on the GPU: the rows carry the conditions they were measured in (NVML), their
-- baseline's figure, spread and ceiling; rotate = n builds n input sets and verifies each; the
-- warm-up runs before the first timed round. Every variant's output is checked on the host.
local ffi = require("ffi")
local cuasync = require("cuasync")
local native = require("cuasync.native")
local conditions = require("cuasync.conditions")
local sweep = require("cuasync.tools.sweep")
local H = require("helper")

local gpu_it = H.gpu_it(it, pending)
local MB = 64 * 1024 * 1024

-- A memset sweep: each build makes its own buffer of p.mb MiB (counted in `built`), filled with
-- a fresh byte; verify reads back a sample of it.
local function memset_sweep(extra, built)
  local spec = { name = ("method_gpu_%d_%d"):format(os.time(), H.random_u32() % 100000), unit = "GB/s", rounds = 3, reps = 3,
    params = { mb = { 64, 128 } },
    build = function(p)
      built[#built + 1] = p.mb
      local n = p.mb * 1024 * 1024
      local buf = cuasync.alloc(n)
      local byte = 1 + H.random_u32() % 250
      return { run = function() buf:fill(byte) end, bytes = n, poison = function() buf:poison() end,
               verify = function()
                 local got = buf:download("uint8_t", n)
                 for i = 0, n - 1, 4099 do
                   if got[i] ~= byte then return false, ("byte %d is %d, not %d"):format(i, got[i], byte) end
                 end
                 return true
               end }
    end,
    baseline = { name = "memset", bytes = MB, run = function() end } }
  local base = cuasync.alloc(MB)
  spec.baseline.run = function() base:fill(7) end
  for k, v in pairs(extra or {}) do spec[k] = v end
  return sweep(spec)
end

describe("sweep method on the GPU", function()
  gpu_it("puts the clocks, power, temperature and reasons in every measured row, with base_ms, spread and ceiling", function()
    local built = {}
    local S = memset_sweep({}, built)
    S:run{ quiet = true, force = true }
    local ok, why = conditions.available()
    assert.is_true(ok, tostring(why))   -- the driver ships NVML: a GPU machine without it is a finding
    for _, r in ipairs(S.rows) do
      assert.are.equal("measured", r.kind, tostring(r.reason))
      assert.is_true(r.verified)
      assert.is_true(r.sm_mhz > 100 and r.sm_mhz < 4000, tostring(r.sm_mhz))
      assert.is_true(r.temp_c >= 10 and r.temp_c <= 110, tostring(r.temp_c))
      assert.is_true(r.power_w > 10, tostring(r.power_w))
      assert.is_string(r.reasons)
      assert.is_true(math.abs(r.base_ms / r.ms - r.ratio) < 1e-12)
      assert.is_number(r.spread)
      assert.is_true(r.ceiling > 0 and r.ceiling < 1.2, tostring(r.ceiling))
      assert.are.equal("memory spec", r.ceiling_of)
      assert.is_true(r.of_copy > 0, tostring(r.of_copy))
    end
    local text = S:text{ columns = { "sm_mhz", "power_w", "temp_c", "reasons", "ceiling" } }
    assert.matches("sm_mhz", text, 1, true)
    local _, n = text:gsub("warm%-up: memset run for 300 ms before the first timed round of each batch %(warmup_ms%)", "")
    assert.are.equal(1, n, text)   -- said once, though it ran before the sweep's rounds and the re-measure's
  end)

  gpu_it("measures every row without NVML and says once why the conditions are missing", function()
    local code = [[
local cuasync = require("cuasync")
local buf = cuasync.alloc(16777216)
local S = cuasync.sweep{ name = "method_nonvml_" .. os.time(), rounds = 2, reps = 2, warmup_ms = 0, params = { k = { 1, 2 } },
  build = function(p) return { run = function() buf:fill(p.k) end, bytes = 16777216 } end }
S:run{ quiet = true, force = true }
for _, r in ipairs(S.rows) do assert(r.kind == "measured" and r.sm_mhz == nil, r.kind) end
print(S:text())
]]
    local ok, out = H.luajit(code, { CUASYNC_NVML_LIB = H.missing("libnvidia-ml.so.1") })
    assert.is_true(ok, out)
    local _, n = out:gsub("no clock, power, temperature or clock%-event reasons in the rows: NVML not available: ", "")
    assert.are.equal(1, n, out)
    assert.matches("2 points: 2 measured", out, 1, true)
  end)

  gpu_it("keeps the fields NVML reads where one call fails, and says once which and why", function()
    local lib = H.tmpdir() .. "/fake-libnvidia-ml.so"
    local built, rc = H.sh(("cc -shared -fPIC -std=c99 -o %s spec/support/fake_nvml.c"):format(lib))
    assert.are.equal(0, rc, built)
    local bus, err = ffi.new("char[64]"), ffi.new("char[256]")
    local ordinal = cuasync.current_device().ordinal
    assert.are.equal(0, native.C.cuasync_device_pci_bus_id(ordinal, bus, 64, err, 256), ffi.string(err))
    local code = [[
local cuasync = require("cuasync")
local buf = cuasync.alloc(16777216)
local S = cuasync.sweep{ name = "method_fake_nvml_" .. os.time(), rounds = 2, reps = 2, warmup_ms = 0, params = { k = { 1, 2 } },
  build = function(p) return { run = function() buf:fill(p.k) end, bytes = 16777216 } end }
S:run{ quiet = true, force = true }
for _, r in ipairs(S.rows) do
  assert(r.kind == "measured" and r.sm_mhz ~= nil and r.temp_c ~= nil and r.power_w == nil, r.kind)
end
print(S:text())
]]
    local ok, out = H.luajit(code, { CUASYNC_NVML_LIB = lib, FAKE_NVML_BUS = ffi.string(bus), FAKE_NVML_FAIL = "nvmlDeviceGetPowerUsage" })
    assert.is_true(ok, out)
    local _, n = out:gsub("NVML could not read power: nvmlDeviceGetPowerUsage: ", "")
    assert.are.equal(1, n, out)
  end)

  gpu_it("rotate = 3 builds three input sets per point, verifies each and times them in turn", function()
    local built = {}
    local S = memset_sweep({ rotate = 3, warmup_ms = 0 }, built)
    S:run{ quiet = true, force = true }
    for _, r in ipairs(S.rows) do assert.are.equal("measured", r.kind, tostring(r.reason)) end
    local per = {}
    for _, mb in ipairs(built) do per[mb] = (per[mb] or 0) + 1 end
    -- three per point, and three more each time a winner is measured again alone
    for _, mb in ipairs({ 64, 128 }) do
      assert.is_true(per[mb] >= 3 and per[mb] % 3 == 0, ("%d MiB built %s times"):format(mb, tostring(per[mb])))
    end
    assert.matches("rotate = 3 rotates the variants' inputs, not the baseline's (give baseline.build to rotate it)", S:text(), 1, true)
  end)

  gpu_it("fails a point whose second input set verifies wrong, naming the copy", function()
    local n = 0
    local S = sweep{ name = ("method_gpu_bad_%d"):format(os.time()), rounds = 1, reps = 1, rotate = 2, warmup_ms = 0,
      params = { k = { 1 } },
      build = function()
        n = n + 1
        local me = n
        local buf = cuasync.alloc(4096)
        return { run = function() buf:fill(1) end, verify = function() return me == 1, "copy " .. me .. " is wrong" end }
      end }
    S:run{ quiet = true, force = true }
    local r = S.rows[1]
    assert.are.equal("failed", r.kind)
    assert.are.equal("verification", r.failed_in)
    assert.are.equal("verification: rotate: copy 2 of 2: copy 2 is wrong", r.reason)
  end)
end)
