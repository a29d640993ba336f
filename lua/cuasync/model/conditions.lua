-- What a GPU's conditions say, apart from reading them (conditions.lua samples them through
-- NVML): the names of NVML's clock-event reason bits, and one summary row of a list of samples.
-- Pure Lua.
--   names = reason_names(bits)    bits: the set bits' indexes (0..63) -> sorted names
--   row = summarize(samples)      n, sm_mhz (median), sm_mhz_min, sm_mhz_max, mem_mhz (median),
--                                 power_w (mean), temp_c (max), power_limit_w, max_sm_mhz,
--                                 max_mem_mhz (max), reasons (the union, sorted), missing (the
--                                 fields no sample had: { power = why })
local util = require("cuasync.util")

local M = {}

-- NVML's clock-event reasons (nvml.h, nvmlClocksEventReason*): bit i of the mask is M.REASONS[i + 1].
M.REASONS = {
  "gpu_idle",                      -- 0x1
  "applications_clocks_setting",   -- 0x2
  "sw_power_cap",                  -- 0x4
  "hw_slowdown",                   -- 0x8
  "sync_boost",                    -- 0x10
  "sw_thermal_slowdown",           -- 0x20
  "hw_thermal_slowdown",           -- 0x40
  "hw_power_brake_slowdown",       -- 0x80
  "display_clock_setting",         -- 0x100
}

-- The name of bit i (0..63): its NVML name, or its value in hex ("0x200") for a bit NVML named later.
function M.reason_name(i)
  util.int_in("conditions.reason_name", "i", i, 0, 63)
  return M.REASONS[i + 1] or ("0x%x"):format(2 ^ i)
end

-- The names of the bits set (a list of bit indexes), sorted.
function M.reason_names(bits)
  util.list("conditions.reason_names", "bits", bits)
  local names = {}
  for k, i in ipairs(bits) do
    util.int_in("conditions.reason_names", ("bits[%d]"):format(k), i, 0, 63)
    names[#names + 1] = M.reason_name(i)
  end
  table.sort(names)
  return names
end

-- The fields of a sample by the names NVML's reader gives them (native/cuasync_nvml.h: the field
-- without its unit), which are also the keys of a sample's `missing` table.
M.FIELDS = { sm = "sm_mhz", mem = "mem_mhz", power = "power_w", temp = "temp_c", reasons = "reasons",
             power_limit = "power_limit_w", max_sm = "max_sm_mhz", max_mem = "max_mem_mhz" }

-- -- Summary ------------------------------------------------------------------------------------

local WHERE = "conditions.summarize"

-- The numeric fields of a sample and how many samples' values make the summary's.
local NUMBERS = { "sm_mhz", "mem_mhz", "power_w", "temp_c", "power_limit_w", "max_sm_mhz", "max_mem_mhz" }

local function median(list)
  table.sort(list)
  local n = #list
  return n % 2 == 1 and list[(n + 1) / 2] or (list[n / 2] + list[n / 2 + 1]) / 2
end

local function mean(list)
  local sum = 0
  for _, v in ipairs(list) do sum = sum + v end
  return sum / #list
end

local function largest(list)
  local m = list[1]
  for i = 2, #list do m = math.max(m, list[i]) end
  return m
end

-- One row of a list of samples (each a table as cuasync.conditions returns it). Each value is
-- taken over the samples that have the field; a field no sample has is left out of the row and
-- named in row.missing, with the first sample's reason. Raises on an empty list.
function M.summarize(samples)
  util.list(WHERE, "samples", samples)
  if #samples == 0 then util.fail(WHERE, "samples is empty") end
  local values, union, missing, had_reasons = {}, {}, {}, false
  for _, f in ipairs(NUMBERS) do values[f] = {} end
  for i, s in ipairs(samples) do
    if type(s) ~= "table" then
      util.fail(WHERE, ("samples[%d] must be a table (a sample of cuasync.conditions; got %s)"):format(i, util.describe(s)))
    end
    for _, f in ipairs(NUMBERS) do
      local v = s[f]
      if v ~= nil then
        if type(v) ~= "number" or v ~= v then
          util.fail(WHERE, ("samples[%d].%s must be a number (got %s)"):format(i, f, util.describe(v)))
        end
        local list = values[f]
        list[#list + 1] = v
      end
    end
    if s.reasons ~= nil then
      had_reasons = true
      util.list(WHERE, ("samples[%d].reasons"):format(i), s.reasons)
      for k, name in ipairs(s.reasons) do
        if type(name) ~= "string" then
          util.fail(WHERE, ("samples[%d].reasons[%d] must be a string (got %s)"):format(i, k, util.describe(name)))
        end
        union[name] = true
      end
    end
    if s.missing ~= nil then
      util.kind(WHERE, ("samples[%d].missing"):format(i), s.missing, "table")
      for k, why in pairs(s.missing) do missing[k] = missing[k] or why end
    end
  end
  local row = { n = #samples }
  local v = values
  if #v.sm_mhz > 0 then
    row.sm_mhz = median(v.sm_mhz)   -- sorts the list: its ends are the extremes
    row.sm_mhz_min, row.sm_mhz_max = v.sm_mhz[1], v.sm_mhz[#v.sm_mhz]
  end
  if #v.mem_mhz > 0 then row.mem_mhz = median(v.mem_mhz) end
  if #v.power_w > 0 then row.power_w = mean(v.power_w) end
  if #v.temp_c > 0 then row.temp_c = largest(v.temp_c) end
  if #v.power_limit_w > 0 then row.power_limit_w = largest(v.power_limit_w) end
  if #v.max_sm_mhz > 0 then row.max_sm_mhz = largest(v.max_sm_mhz) end
  if #v.max_mem_mhz > 0 then row.max_mem_mhz = largest(v.max_mem_mhz) end
  if had_reasons then
    row.reasons = {}
    for name in pairs(union) do row.reasons[#row.reasons + 1] = name end
    table.sort(row.reasons)
  end
  -- a field some sample had is in the row: only the ones none had stay missing
  for k in pairs(missing) do
    if row[M.FIELDS[k] or k] ~= nil then missing[k] = nil end
  end
  if next(missing) then row.missing = missing end
  return row
end

return M
