-- Tensor maps (cuTensorMapEncodeTiled) as Lua objects: every rule the driver would answer with a
-- bare CUDA_ERROR_INVALID_VALUE is checked here first and named; the map is passed to kernels by
-- value through the `tensormap` signature type.
--   local tm = cuasync.tensormap{ buffer = buf, dtype = "f32", dims = { W, H }, box = { 32, 16 } }
--   tm.box_bytes   -- bytes one load of a box brings (a pipeline's expect_tx)
--   tm:describe()
local ffi = require("ffi")
local native = require("cuasync.native")
local buffer = require("cuasync.buffer")
local util = require("cuasync.util")

local C, errbuf, ERRLEN = native.C, native.errbuf, native.ERRLEN

local M = {}
local TensorMap = {}
TensorMap.__index = TensorMap

local function fail(msg, level) util.fail("tensormap", msg, (level or 2) + 1) end

M.DTYPES = {
  u8 = { 0, 1 }, u16 = { 1, 2 }, u32 = { 2, 4 }, i32 = { 3, 4 }, u64 = { 4, 8 }, i64 = { 5, 8 },
  f16 = { 6, 2, float = true }, f32 = { 7, 4, float = true }, f64 = { 8, 8, float = true },
  bf16 = { 9, 2, float = true }, f32_ftz = { 10, 4, float = true }, tf32 = { 11, 4, float = true },
  tf32_ftz = { 12, 4, float = true },
}
local INTERLEAVE = { none = 0, ["16B"] = 1, ["32B"] = 2 }
local SWIZZLE = { none = 0, ["32B"] = 1, ["64B"] = 2, ["128B"] = 3 }
local SWIZZLE_SPAN = { none = math.huge, ["32B"] = 32, ["64B"] = 64, ["128B"] = 128 }
local L2 = { none = 0, ["64B"] = 1, ["128B"] = 2, ["256B"] = 3 }
local OOB = { zero = 0, nan = 1 }

local function names(t)
  local s = {}
  for k in pairs(t) do s[#s + 1] = k end
  table.sort(s)
  return table.concat(s, ", ")
end

local function enum(field, v, t)
  if type(v) ~= "string" or t[v] == nil then
    fail(("%s = %s is not one of %s"):format(field, util.describe(v), names(t)), 3)
  end
  return t[v]
end

-- A list of `n` positive integers (n == nil: 1..5 entries), each checked by `each`.
local function int_list(field, v, n, lo, hi)
  if type(v) ~= "table" then fail(("%s must be a table of integers (got %s)"):format(field, type(v)), 3) end
  if n and #v ~= n then fail(("%s has %d entries but the tensor has rank %d"):format(field, #v, n), 3) end
  if not n and (#v < 1 or #v > 5) then fail(("%s has %d entries (rank must be 1..5)"):format(field, #v), 3) end
  for i = 1, #v do
    local x = v[i]
    if not util.is_integer(x) or x < lo or x > hi then
      fail(("%s[%d] = %s is outside %s..%s"):format(field, i, util.describe(x), tostring(lo),
           hi == 2 ^ 32 and "2^32" or hi == 2 ^ 40 - 1 and "2^40-1" or tostring(hi)), 3)
    end
  end
  return v
end

local FIELDS = { buffer = true, ptr = true, bytes = true, dtype = true, dims = true, strides = true, box = true,
                 element_strides = true, swizzle = true, interleave = true, l2_promotion = true, oob_fill = true,
                 load_only = true }

function M.new(spec)
  util.kind("tensormap", "spec", spec, "table", 2)
  util.known_fields("tensormap", spec, FIELDS, 2)
  -- where: a device buffer (its size is checked) or a raw address (with optional bytes)
  local address, size
  if spec.buffer ~= nil then
    if spec.ptr ~= nil then fail("give buffer or ptr, not both") end
    if not ffi.istype(buffer.buffer_t, spec.buffer) then
      fail(("buffer must be a cuasync buffer (got %s)"):format(util.describe(spec.buffer)))
    end
    if spec.buffer.ptr == 0 then fail("buffer is closed") end
    address, size = spec.buffer.ptr, tonumber(spec.buffer.nbytes)
  elseif spec.ptr ~= nil then
    address = ffi.cast("uint64_t", spec.ptr)
    if spec.bytes ~= nil then size = util.count("tensormap", "bytes", spec.bytes, 2) end
  else
    fail("buffer (or ptr) is required: the global memory the map describes")
  end
  local dt = M.DTYPES[spec.dtype]
  if not dt then fail(("dtype = %s is not one of %s"):format(util.describe(spec.dtype), names(M.DTYPES))) end
  local esize = dt[2]
  local dims = int_list("dims", spec.dims, nil, 1, 2 ^ 32)
  local rank = #dims
  local interleave = spec.interleave or "none"
  local il = enum("interleave", interleave, INTERLEAVE)
  local swizzle = spec.swizzle or "none"
  local sw = enum("swizzle", swizzle, SWIZZLE)
  local l2 = enum("l2_promotion", spec.l2_promotion or "none", L2)
  local oob_fill = spec.oob_fill or "zero"
  local oob = enum("oob_fill", oob_fill, OOB)
  if il ~= 0 and rank < 3 then fail(("interleave = %s needs rank 3..5 (dims has %d entries)"):format(interleave, rank)) end
  if interleave == "32B" and swizzle ~= "32B" then
    fail(("interleave = 32B requires swizzle = 32B (got %s)"):format(swizzle))
  end
  if oob == 1 and not dt.float then fail(("oob_fill = nan needs a floating-point dtype (got %s)"):format(spec.dtype)) end
  local align = interleave == "32B" and 32 or 16   -- address and strides alike
  local a = tonumber(address % align)
  if a ~= 0 then
    fail(("address 0x%x is not %d-byte aligned (tensor maps need %d)"):format(tonumber(address), align, align))
  end
  -- strides: rank - 1 byte strides of dimensions 2..rank; packed row-major by default
  local strides = spec.strides
  if strides == nil then
    strides = {}
    local s = dims[1] * esize
    for i = 2, rank do
      strides[i - 1] = s
      s = s * dims[i]
    end
  end
  int_list("strides", strides, rank - 1, 1, 2 ^ 40 - 1)
  local span = dims[1] * esize
  for i = 1, rank - 1 do
    if strides[i] % align ~= 0 then
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
  -- Measured on the H200: a tensor store clips the innermost dimension to whole 16-byte units, so
  -- a last partial unit is written in full, past the tensor's edge (the next row's padding, or
  -- past the buffer's end). Loads are unaffected.
  if spec.load_only ~= nil and type(spec.load_only) ~= "boolean" then
    fail(("load_only must be a boolean (got %s)"):format(type(spec.load_only)))
  end
  if (dims[1] * esize) % 16 ~= 0 and not spec.load_only then
    fail(("dims[1] * %d bytes = %d is not a multiple of 16: a tensor store writes whole 16-byte units at the edge, past the tensor (pass load_only = true for a map only loaded from)"):format(
         esize, dims[1] * esize))
  end
  local box = int_list("box", spec.box, rank, 1, 256)
  local estr = spec.element_strides or {}
  if spec.element_strides == nil then for i = 1, rank do estr[i] = 1 end end
  int_list("element_strides", estr, rank, 1, 8)
  local inner = box[1] * esize
  if il == 0 and inner % 16 ~= 0 then
    fail(("box[1] * %d bytes = %d is not a multiple of 16 (the inner box dimension moves 16-byte units)"):format(esize, inner))
  end
  if il == 0 and inner > SWIZZLE_SPAN[swizzle] then
    fail(("box[1] * %d bytes = %d exceeds the %s swizzle span"):format(esize, inner, swizzle))
  end
  local box_bytes = esize
  for i = 1, rank do box_bytes = box_bytes * math.ceil(box[i] / estr[i]) end

  local map = ffi.new("CUtensorMap[1]")
  local cdims = ffi.new("unsigned long long[5]")
  local cstrides = ffi.new("unsigned long long[5]")
  local cbox = ffi.new("unsigned[5]")
  local cestr = ffi.new("unsigned[5]")
  for i = 1, rank do cdims[i - 1] = dims[i]; cbox[i - 1] = box[i]; cestr[i - 1] = estr[i] end
  for i = 1, rank - 1 do cstrides[i - 1] = strides[i] end
  native.check(C.cuasync_tensormap_encode_tiled(map, dt[1], rank, address, cdims, cstrides, cbox, cestr,
                                                il, sw, l2, oob, errbuf, ERRLEN))
  local copy = function(t) local r = {} for i = 1, #t do r[i] = t[i] end return r end
  return setmetatable({
    map = map[0], holder = map, buffer = spec.buffer, address = address, dtype = spec.dtype, elem_bytes = esize,
    rank = rank, dims = copy(dims), strides = copy(strides), box = copy(box), element_strides = copy(estr),
    swizzle = swizzle, interleave = interleave, l2_promotion = spec.l2_promotion or "none", oob_fill = oob_fill,
    box_bytes = box_bytes, load_only = spec.load_only or false,
  }, TensorMap)
end

function TensorMap:describe()
  local function l(t) return "{" .. table.concat(t, ", ") .. "}" end
  return ("tensormap %s rank %d at 0x%x: dims %s, strides %s bytes, box %s (%d bytes), element strides %s, swizzle %s, interleave %s, l2 promotion %s, oob fill %s"):format(
    self.dtype, self.rank, tonumber(self.address), l(self.dims), l(self.strides), l(self.box), self.box_bytes,
    l(self.element_strides), self.swizzle, self.interleave, self.l2_promotion, self.oob_fill)
end

TensorMap.__tostring = TensorMap.describe

return M
