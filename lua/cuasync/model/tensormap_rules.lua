-- The rules of cuTensorMapEncodeTiled / EncodeIm2col / ReplaceAddress (cuda.h, CUDA 13), checked
-- in Lua so that each broken one is named with its argument and value: the driver answers any of
-- them with a bare CUDA_ERROR_INVALID_VALUE. Pure Lua: tensormap.lua resolves the buffer or
-- address and the device, and passes their facts in.
local util = require("cuasync.util")
local swizzles = require("cuasync.model.swizzle")

local M = {}

function M.fail(msg) util.fail("tensormap", msg) end
local fail = M.fail

-- name -> { driver enum, bits per element, float, packed = bytes per value in shared memory,
--           dim_multiple = globalDim[0] granule, align = address/stride alignment }
-- The packed 4/6-bit types (CUDA 12.8+) are Blackwell (sm_100) types.
M.DTYPES = {
  u8 = { 0, 8 }, u16 = { 1, 16 }, u32 = { 2, 32 }, i32 = { 3, 32 }, u64 = { 4, 64 }, i64 = { 5, 64 },
  f16 = { 6, 16, float = true }, f32 = { 7, 32, float = true }, f64 = { 8, 64, float = true },
  bf16 = { 9, 16, float = true }, f32_ftz = { 10, 32, float = true }, tf32 = { 11, 32, float = true },
  tf32_ftz = { 12, 32, float = true },
  ["16u4_align8b"] = { 13, 4, packed = 0.5, dim_multiple = 2, sm100 = true },
  ["16u4_align16b"] = { 14, 4, packed = 1, dim_multiple = 128, align = 32, box1 = 128, sm100 = true,
                        swizzles = { none = true, ["128B"] = true }, load_only = true },
  ["16u6_align16b"] = { 15, 6, packed = 1, dim_multiple = 128, align = 32, box1 = 128, sm100 = true,
                        swizzles = { none = true, ["128B"] = true }, no_interleave = true },
}
M.INTERLEAVE = { none = 0, ["16B"] = 1, ["32B"] = 2 }
M.SWIZZLE = swizzles.TENSORMAP
M.L2 = { none = 0, ["64B"] = 1, ["128B"] = 2, ["256B"] = 3 }
M.OOB = { zero = 0, nan = 1 }

function M.enum(field, v, t)
  if type(v) ~= "string" or t[v] == nil then
    fail(("%s = %s is not one of %s"):format(field, util.describe(v), util.sorted_keys(t)))
  end
  return t[v]
end

function M.dtype(v)
  local dt = type(v) == "string" and M.DTYPES[v]
  if not dt then fail(("dtype = %s is not one of %s"):format(util.describe(v), util.sorted_keys(M.DTYPES))) end
  return dt
end

local function bound(x)
  return x == 2 ^ 32 and "2^32" or x == 2 ^ 40 - 1 and "2^40-1" or tostring(x)
end

-- A list of integers in lo..hi: exactly n entries, or (n == nil) 1..5 of them.
function M.int_list(field, v, n, lo, hi, why)
  if type(v) ~= "table" then fail(("%s must be a table of integers (got %s)"):format(field, type(v))) end
  if n and #v ~= n then fail(("%s has %d entries but %s"):format(field, #v, why or ("the tensor has rank " .. n))) end
  if not n and (#v < 1 or #v > 5) then fail(("%s has %d entries (rank must be 1..5)"):format(field, #v)) end
  for i = 1, #v do
    local x = v[i]
    if not util.is_integer(x) or x < lo or x > hi then
      fail(("%s[%d] = %s is outside %s..%s"):format(field, i, util.describe(x), bound(lo), bound(hi)))
    end
  end
  return v
end

-- Address alignment: 16 bytes; 32 with 32B interleave or the 16-byte-aligned packed types.
-- Returns the alignment and why.
function M.alignment(dt, interleave, dtype)
  if interleave == "32B" then return 32, "interleave = 32B needs 32" end
  if dt.align == 32 then return 32, ("dtype %s needs 32"):format(dtype) end
  return 16, "tensor maps need 16"
end

function M.check_address(address, align, why)
  local a = tonumber(address % align)
  if a ~= 0 then
    fail(("address 0x%x is not %d-byte aligned (%s)"):format(tonumber(address), align, why))
  end
end

-- Bytes of `n` elements of dt in global memory (packed types: n values of `bits` each).
function M.global_bytes(dt, n) return n * dt[2] / 8 end

-- dims, then strides (default packed row-major) with every stride rule; returns strides, span.
function M.layout(dt, dims, strides, size, align)
  local rank = #dims
  if dt.dim_multiple and dims[1] % dt.dim_multiple ~= 0 then
    fail(("dims[1] = %d is not a multiple of %d (%s counts single values)"):format(dims[1], dt.dim_multiple,
         "a packed type"))
  end
  local derived = strides == nil
  if derived then
    strides = {}
    local s = M.global_bytes(dt, dims[1])   -- packed exactly: padding is the caller's to state
    for i = 2, rank do
      strides[i - 1] = s
      s = s * dims[i]
    end
  end
  M.int_list("strides", strides, rank - 1, 1, 2 ^ 40 - 1, ("a rank-%d tensor has %d (dimensions 2..%d, in bytes)"):format(rank, rank - 1, rank))
  local span = M.global_bytes(dt, dims[1])
  for i = 1, rank - 1 do
    if strides[i] % align ~= 0 and derived then   -- the user gave dims, not strides: say so
      fail(("dims[1] = %d makes rows of %d bytes, and the packed strides derived from dims (none were given) must be multiples of %d bytes: give strides (a padded pitch), or make dims[1] x element size a multiple of %d"):format(
           dims[1], M.global_bytes(dt, dims[1]), align, align))
    elseif strides[i] % align ~= 0 then
      fail(("strides[%d] = %d is not a multiple of %d bytes"):format(i, strides[i], align))
    end
    if strides[i] < span then
      fail(("strides[%d] = %d is smaller than dimension %d's extent of %d bytes (rows would overlap)"):format(
           i, strides[i], i, span))
    end
    span = strides[i] * dims[i + 1]
  end
  if size and span > size then
    fail(("the tensor spans %d bytes but the buffer holds %d"):format(span, size))
  end
  return strides, span
end

-- swizzle, interleave, l2 promotion and OOB fill by name, with the rules that tie them to the
-- dtype and the rank.
function M.modes(spec, dt, rank, min_rank_interleave)
  local interleave = spec.interleave or "none"
  local il = M.enum("interleave", interleave, M.INTERLEAVE)
  local swizzle = spec.swizzle or "none"
  local sw = M.enum("swizzle", swizzle, M.SWIZZLE)
  local l2_promotion = spec.l2_promotion or "none"
  local l2 = M.enum("l2_promotion", l2_promotion, M.L2)
  local oob_fill = spec.oob_fill or "zero"
  local oob = M.enum("oob_fill", oob_fill, M.OOB)
  if il ~= 0 and rank < min_rank_interleave then
    fail(("interleave = %s needs rank 3..5 (dims has %d entries)"):format(interleave, rank))
  end
  if interleave == "32B" and swizzle ~= "32B" then
    fail(("interleave = 32B requires swizzle = 32B (got %s)"):format(swizzle))
  end
  if oob == 1 and not dt.float then
    fail(("oob_fill = nan needs a floating-point dtype (got %s)"):format(spec.dtype))
  end
  if dt.no_interleave and il ~= 0 then
    fail(("dtype %s needs interleave = none (got %s)"):format(spec.dtype, interleave))
  end
  if dt.swizzles and not dt.swizzles[swizzle] then
    fail(("dtype %s allows swizzle = none or 128B (got %s)"):format(spec.dtype, swizzle))
  end
  return { interleave = interleave, swizzle = swizzle, l2_promotion = l2_promotion, oob_fill = oob_fill,
           il = il, sw = sw, l2 = l2, oob = oob }
end

-- The inner extent of the box (or of an im2col pixel) in shared memory: a whole number of
-- 16-byte units (without interleave) that fits the swizzle span.
function M.inner(field, bytes, m)
  if m.il == 0 and bytes % 16 ~= 0 then
    fail(("%s = %s is not a multiple of 16 (the inner box dimension moves 16-byte units)"):format(field,
         tostring(bytes)))
  end
  if m.il == 0 and bytes > swizzles.limit(m.swizzle) then
    fail(("%s = %d exceeds the %s swizzle span"):format(field, bytes, m.swizzle))
  end
end

-- A packed (Blackwell) type on a device below compute capability 10.0: say so before the driver
-- does. cc is the device's (e.g. 90), nil where no device is known.
function M.device_supports(dt, dtype, cc, name)
  if not dt.sm100 or not cc or cc >= 100 then return end
  fail(("dtype %s is a Blackwell type (compute capability 10.0+); %s is %d.%d"):format(dtype, name or "this device",
       math.floor(cc / 10), cc % 10))
end

return M
