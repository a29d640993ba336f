-- The ceiling a row is read against: pure Lua, no GPU.
--   FLOP rows: SMs x dense FLOP per clock per SM (the dtype of the MMA's inputs) x the SM clock
--   the row ran at (NVML), so a GEMM at 1.5 GHz on a 700 W H200 is read against ~811 TFLOP/s,
--   not the 989 of the datasheet (quoted at 1.83 GHz).
--   Byte rows: the memory's spec bandwidth, memory clock x 2 (double data rate) x bus width.
-- Per clock per SM, dense (no sparsity), from the architecture whitepapers: a Hopper SM's four
-- tensor cores do 1024 bf16 FMAs a clock (4096 FLOP); tf32 half that, fp8 and int8 twice; the
-- FP32 pipes 128 FMAs (256 FLOP), FP64 64 FMAs, FP64 on tensor cores 128 FMAs.
local M = {}

M.FLOP_PER_CLOCK_SM = {
  sm_90 = { bf16 = 4096, f16 = 4096, tf32 = 2048, e4m3 = 8192, e5m2 = 8192, s8 = 8192,
            f32 = 256, f64 = 128, f64_tensor = 256 },
  sm_80 = { bf16 = 2048, f16 = 2048, tf32 = 1024, s8 = 4096, f32 = 128, f64 = 64, f64_tensor = 128 },
}
M.FLOP_PER_CLOCK_SM.sm_90a = M.FLOP_PER_CLOCK_SM.sm_90

-- The dtypes of an architecture's table, as a sorted list (for a message).
function M.dtypes(arch)
  local t = {}
  for k in pairs(M.FLOP_PER_CLOCK_SM[arch] or {}) do t[#t + 1] = k end
  table.sort(t)
  return t
end

-- Peak FLOP/s: sms x FLOP/clock/SM x clock; or nil and why (an architecture or dtype not in the table).
function M.peak_flops(arch, dtype, sms, clock_mhz)
  local t = M.FLOP_PER_CLOCK_SM[arch]
  if not t then return nil, ("no FLOP-per-clock table for %s (known: sm_80, sm_90)"):format(tostring(arch)) end
  local per = t[dtype]
  if not per then
    return nil, ("no %s entry in the %s table (dtypes: %s)"):format(tostring(dtype), arch, table.concat(M.dtypes(arch), ", "))
  end
  return sms * per * clock_mhz * 1e6
end

-- The memory's spec bandwidth in GB/s: mem clock (kHz, the driver's MEMORY_CLOCK_RATE) x 2 x bus
-- width / 8. H200: 3201 MHz x 2 x 6144 bits = 4917 GB/s.
function M.memory_gbps(mem_clock_khz, bus_width_bits)
  return mem_clock_khz * 1e3 * 2 * bus_width_bits / 8 / 1e9
end

-- A measured row's ceiling fields, set in place: r.ceiling (the fraction of the peak at the
-- clock it ran at, or of the memory spec), r.ceiling_of ("peak at 1515 MHz" | "memory spec"),
-- and, given the measured copy bandwidth, r.of_copy. dev: { arch, sms, mem_clock_khz,
-- bus_width_bits }; work: { flops, bytes, dtype }; clock_mhz: the row's SM clock (NVML), or nil.
-- Returns nil, or why no ceiling (said once by the caller).
function M.fill(r, dev, work, clock_mhz, copy_gbps)
  if r.tflops and work.flops then
    if not work.dtype then return "build(p) gave flops but no dtype: no ceiling (give build(p).dtype, e.g. \"bf16\")" end
    if not clock_mhz then return "no SM clock was read (NVML): no ceiling for FLOP rows" end
    local peak, why = M.peak_flops(dev.arch, work.dtype, dev.sms, clock_mhz)
    if not peak then return why end
    r.ceiling = r.tflops * 1e12 / peak
    r.ceiling_of = ("peak at %d MHz"):format(math.floor(clock_mhz + 0.5))
  elseif r.gbps and work.bytes then
    if dev.mem_clock_khz and dev.bus_width_bits and dev.mem_clock_khz > 0 and dev.bus_width_bits > 0 then
      r.ceiling = r.gbps / M.memory_gbps(dev.mem_clock_khz, dev.bus_width_bits)
      r.ceiling_of = "memory spec"
    end
    if copy_gbps and copy_gbps > 0 then r.of_copy = r.gbps / copy_gbps end
  end
end

return M
