-- Tensor maps as Lua objects: every rule the driver would answer with a bare
-- CUDA_ERROR_INVALID_VALUE is checked first and named (tensormap_rules.lua); the map is passed to
-- kernels by value through the `tensormap` signature type.
--   local tm = cuasync.tensormap{ buffer = buf, dtype = "f32", dims = { W, H }, box = { 32, 16 } }
--   local ic = cuasync.tensormap{ buffer = img, dtype = "f16", dims = { C, W, H, N },
--                im2col = { lower = { -1, -1 }, upper = { -1, -1 }, channels = 64, pixels = 128 } }
--   tm.box_bytes           -- bytes one load brings (a pipeline's expect_tx)
--   tm.smem_bytes          -- shared memory one box takes (more than box_bytes when a swizzled
--                          -- row is narrower than the swizzle span: rows are padded to it)
--   tm:describe()          -- every field, readable
--   tm:replace_address(b)  -- the same map over another buffer (cuTensorMapReplaceAddress)
-- encode = false checks every rule but does not encode the 128-byte map (no driver needed): enough
-- for a cuasync.pipeline plan and for compiling its kernels on a machine without a GPU; a launch
-- refuses such a map.
local ffi = require("ffi")
local native = require("cuasync.native")
local util = require("cuasync.util")
local buffer = require("cuasync.buffer")
local device = require("cuasync.device")
local R = require("cuasync.model.tensormap_rules")
local swizzles = require("cuasync.model.swizzle")
local handle = require("cuasync.handle")
local capture = require("cuasync.capture")
require("cuasync.cdef.tensormap")

local C, errbuf, ERRLEN = native.C, native.errbuf, native.ERRLEN
local fail = R.fail

local M = { DTYPES = R.DTYPES }
local TensorMap = {}
TensorMap.__index = TensorMap

local FIELDS = { buffer = true, ptr = true, bytes = true, dtype = true, dims = true, strides = true, box = true,
                 element_strides = true, swizzle = true, interleave = true, l2_promotion = true, oob_fill = true,
                 load_only = true, im2col = true, encode = true }
local IM2COL_FIELDS = { lower = true, upper = true, channels = true, pixels = true }
-- im2col corner offsets: one 16-bit offset in 3D, two 8-bit in 4D, three 5-bit in 5D (cuda.h).
local CORNER = { [3] = 32768, [4] = 128, [5] = 16 }

-- The global memory a map describes: address, size (nil: unknown), buffer. `who` names the
-- call in messages (default "tensormap").
local function where(spec, who)
  who = who or "tensormap"
  local function no(msg) util.fail(who, msg) end
  -- type() tests, not ~= nil: a NULL cdata pointer compares equal to nil
  if type(spec.buffer) ~= "nil" then
    if type(spec.ptr) ~= "nil" then no("give buffer or ptr, not both") end
    if not ffi.istype(buffer.buffer_t, spec.buffer) then
      no(("buffer must be a cuasync buffer (got %s)"):format(util.describe(spec.buffer)))
    end
    if spec.buffer.ptr == 0 then no(handle.dead("buffer", spec.buffer)) end
    if spec.bytes ~= nil then no("bytes goes with ptr; a buffer knows its size") end
    return spec.buffer.ptr, tonumber(spec.buffer.nbytes), spec.buffer
  elseif type(spec.ptr) ~= "nil" then
    local address, null = buffer.address(spec.ptr)
    if null then no("ptr is 0 (a null device address)") end
    if not address then
      no(("ptr must be a device address: a positive integer up to 2^53, a uint64_t or a pointer cdata (got %s)"):format(
         util.describe(spec.ptr)))
    end
    local size
    if spec.bytes ~= nil then size = util.count(who, "bytes", spec.bytes) end
    return address, size
  end
  no("buffer (or ptr) is required: the global memory the map describes")
end

-- The device a map is checked against: the one already open, else, for a map to be encoded,
-- the current one. A plan-only map (encode = false) never brings up the driver: a sweep's
-- compile workers build plans without it (each bring-up cost about a second on the H200, and
-- 16 of them at once, three); the check runs again when the real map is encoded.
local function device_cc(bring_up)
  local dev = device.peek()
  if not dev and bring_up and device.available() then dev = device.current() end
  if dev then return dev.cc, dev.name end
end

local function copy(t) local r = {} for i = 1, #t do r[i] = t[i] end return r end

-- Shared by both encodings: where, dtype, dims, modes, strides, element strides.
local function common(spec, min_rank, max_rank)
  local address, size, buf = where(spec)
  local dt = R.dtype(spec.dtype)
  local dims = R.int_list("dims", spec.dims, nil, 1, 2 ^ 32)
  local rank = #dims
  if rank < min_rank or rank > max_rank then
    fail(("dims has %d entries but an im2col map has rank %d..%d"):format(rank, min_rank, max_rank))
  end
  local m = R.modes(spec, dt, rank, 3)
  local align, why = R.alignment(dt, m.interleave, spec.dtype)
  R.check_address(address, align, why)
  local strides, span = R.layout(dt, dims, spec.strides, size, align)
  if spec.load_only ~= nil and type(spec.load_only) ~= "boolean" then
    fail(("load_only must be a boolean (got %s)"):format(type(spec.load_only)))
  end
  -- Measured on the H200: a tensor store clips the innermost dimension to whole 16-byte units,
  -- so a last partial unit is written in full, past the tensor's edge. Loads are unaffected.
  local inner_bytes = R.global_bytes(dt, dims[1])
  if inner_bytes % 16 ~= 0 and not spec.load_only then
    fail(("dims[1] * %s bytes = %s is not a multiple of 16: a tensor store writes whole 16-byte units at the edge, past the tensor (pass load_only = true for a map only loaded from)"):format(
         tostring(dt[2] / 8), tostring(inner_bytes)))
  end
  local estr = spec.element_strides
  if estr == nil then
    estr = {}
    for i = 1, rank do estr[i] = 1 end
  end
  R.int_list("element_strides", estr, rank, 1, 8)
  return { address = address, size = size, buffer = buf, dt = dt, dims = dims, rank = rank, m = m, align = align,
           strides = strides, span = span, estr = estr }
end

local function arrays(c)
  local cdims = ffi.new("unsigned long long[5]")
  local cstrides = ffi.new("unsigned long long[5]")
  local cestr = ffi.new("unsigned[5]")
  for i = 1, c.rank do cdims[i - 1] = c.dims[i]; cestr[i - 1] = c.estr[i] end
  for i = 1, c.rank - 1 do cstrides[i - 1] = c.strides[i] end
  return cdims, cstrides, cestr
end

local function object(spec, c, map, extra)
  local t = {
    map = map and map[0], holder = map, encoded = map ~= nil, buffer = c.buffer, address = c.address, size = c.size, span = c.span,
    dtype = spec.dtype, elem_bytes = c.dt[2] / 8, rank = c.rank, dims = copy(c.dims), strides = copy(c.strides),
    element_strides = copy(c.estr), swizzle = c.m.swizzle, interleave = c.m.interleave,
    l2_promotion = c.m.l2_promotion, oob_fill = c.m.oob_fill, load_only = spec.load_only or false, align = c.align,
  }
  for k, v in pairs(extra) do t[k] = v end
  return setmetatable(t, TensorMap)
end

local function tiled(spec, c)
  local box = R.int_list("box", spec.box, c.rank, 1, 256)
  local dt = c.dt
  if dt.box1 and box[1] ~= dt.box1 then
    fail(("box[1] = %d but dtype %s loads exactly %d values per row"):format(box[1], spec.dtype, dt.box1))
  end
  local smem_elem = dt.packed or dt[2] / 8       -- bytes per element in shared memory
  local inner = box[1] * smem_elem
  R.inner(("box[1] * %s bytes"):format(tostring(smem_elem)), inner, c.m)
  local box_bytes = smem_elem
  local rows = 1
  for i = 1, c.rank do
    -- element strides skip along dimensions 2..rank; dimension 1 is always dense (cuda.h)
    local n = (i == 1 and c.m.il == 0) and box[1] or math.ceil(box[i] / c.estr[i])
    box_bytes = box_bytes * n
    if i > 1 then rows = rows * n end
  end
  -- measured on the H200 (spec/model/swizzle_spec.lua): with a swizzle, each row takes the whole span
  -- in shared memory, while the transaction count stays the data bytes
  local span = swizzles.limit(c.m.swizzle)
  local smem_bytes = (c.m.il == 0 and span < math.huge and inner < span) and span * rows or box_bytes
  R.device_supports(dt, spec.dtype, device_cc(spec.encode ~= false))
  if spec.encode == false then
    return object(spec, c, nil, { mode = "tiled", box = copy(box), box_bytes = box_bytes, smem_bytes = smem_bytes })
  end
  local map = ffi.new("CUtensorMap[1]")
  local cdims, cstrides, cestr = arrays(c)
  local cbox = ffi.new("unsigned[5]")
  for i = 1, c.rank do cbox[i - 1] = box[i] end
  local m = c.m
  native.check(C.cuasync_tensormap_encode_tiled(map, dt[1], c.rank, c.address, cdims, cstrides, cbox, cestr,
                                                m.il, m.sw, m.l2, m.oob, errbuf, ERRLEN))
  return object(spec, c, map, { mode = "tiled", box = copy(box), box_bytes = box_bytes, smem_bytes = smem_bytes })
end

local function im2col(spec, c)
  local ic = spec.im2col
  if type(ic) ~= "table" then fail(("im2col must be a table {lower, upper, channels, pixels} (got %s)"):format(type(ic))) end
  util.known_fields("tensormap", ic, IM2COL_FIELDS, 3)
  if spec.box ~= nil then fail("give box or im2col, not both (an im2col map's box is channels x pixels)") end
  local n, lim = c.rank - 2, CORNER[c.rank]
  local why = ("a rank-%d im2col map has %d spatial dimension%s"):format(c.rank, n, n == 1 and "" or "s")
  local lower = R.int_list("im2col.lower", ic.lower, n, -lim, lim - 1, why)
  local upper = R.int_list("im2col.upper", ic.upper, n, -lim, lim - 1, why)
  for i = 1, n do
    -- the window's first positions run from lower to dims + upper - 1 along each spatial dimension
    if c.dims[i + 1] + upper[i] - lower[i] < 1 then
      fail(("im2col: spatial dimension %d has no pixels (dims[%d] = %d, lower %d, upper %d: the bounding box must have non-zero area)"):format(
           i, i + 1, c.dims[i + 1], lower[i], upper[i]))
    end
  end
  local channels = ic.channels
  if not util.is_integer(channels) or channels < 1 or channels > 256 then
    fail(("im2col.channels = %s is outside 1..256"):format(util.describe(channels)))
  end
  local pixels = ic.pixels
  if not util.is_integer(pixels) or pixels < 1 or pixels > 1024 then
    fail(("im2col.pixels = %s is outside 1..1024"):format(util.describe(pixels)))
  end
  local dt = c.dt
  if dt.packed then fail(("dtype %s: packed types are not supported in im2col maps by cuasync"):format(spec.dtype)) end
  local esize = dt[2] / 8
  R.inner(("im2col.channels * %d bytes"):format(esize), channels * esize, c.m)
  local fields = { mode = "im2col", lower = copy(lower), upper = copy(upper), channels = channels, pixels = pixels,
                   box_bytes = channels * pixels * esize, smem_bytes = channels * pixels * esize }
  if spec.encode == false then return object(spec, c, nil, fields) end
  local map = ffi.new("CUtensorMap[1]")
  local cdims, cstrides, cestr = arrays(c)
  local clower, cupper = ffi.new("int[3]"), ffi.new("int[3]")
  for i = 1, n do clower[i - 1] = lower[i]; cupper[i - 1] = upper[i] end
  local m = c.m
  native.check(C.cuasync_tensormap_encode_im2col(map, dt[1], c.rank, c.address, cdims, cstrides, clower, cupper,
                                                 channels, pixels, cestr, m.il, m.sw, m.l2, m.oob, errbuf, ERRLEN))
  return object(spec, c, map, fields)
end

function M.new(spec)
  util.kind("tensormap", "spec", spec, "table")
  util.known_fields("tensormap", spec, FIELDS, 2)
  if spec.encode ~= nil and type(spec.encode) ~= "boolean" then
    fail(("encode must be a boolean (got %s)"):format(type(spec.encode)))
  end
  if spec.im2col ~= nil then return im2col(spec, common(spec, 3, 5)) end
  if spec.box == nil then fail("box is required (elements per dimension one load brings), or im2col") end
  return tiled(spec, common(spec, 1, 5))
end

-- tm:replace_address(buffer | ptr[, bytes]): the same map over other memory, checked like the
-- original (alignment, and that the new memory holds the whole tensor).
function TensorMap:replace_address(to, bytes)
  local who = "tensormap.replace_address"
  local spec = { ptr = to, bytes = bytes }
  if type(to) == "cdata" and ffi.istype(buffer.buffer_t, to) then spec = { buffer = to } end
  if type(to) == "nil" then spec = {} end
  local address, size, buf = where(spec, who)
  if tonumber(address % self.align) ~= 0 then
    util.fail(who, ("address 0x%x is not %d-byte aligned (this map needs %d)"):format(tonumber(address), self.align,
              self.align))
  end
  if size and size < self.span then
    util.fail(who, ("the tensor spans %d bytes but the new memory holds %d"):format(self.span, size))
  end
  if self.holder then native.check(C.cuasync_tensormap_replace_address(self.holder, address, errbuf, ERRLEN)) end
  self.address, self.size, self.buffer = address, size, buf
  capture.changed(self)   -- a graph holds the map as captured: it refuses to launch with the old one
  return self
end

function TensorMap:describe()
  local function l(t) return "{" .. table.concat(t, ", ") .. "}" end
  local shape
  if self.mode == "im2col" then
    shape = ("im2col lower %s upper %s, %d channels x %d pixels (%d bytes)"):format(l(self.lower), l(self.upper),
      self.channels, self.pixels, self.box_bytes)
  else
    shape = ("box %s (%d bytes%s)"):format(l(self.box), self.box_bytes,
      self.smem_bytes ~= self.box_bytes and (", %d in shared memory"):format(self.smem_bytes) or "")
  end
  return ("tensormap%s %s rank %d at 0x%x: dims %s, strides %s bytes, %s, element strides %s, swizzle %s, interleave %s, l2 promotion %s, oob fill %s%s"):format(
    self.encoded and "" or " (not encoded)", self.dtype, self.rank, tonumber(self.address), l(self.dims), l(self.strides), shape, l(self.element_strides),
    self.swizzle, self.interleave, self.l2_promotion, self.oob_fill, self.load_only and ", load only" or "")
end

TensorMap.__tostring = TensorMap.describe

-- Is v a cuasync.tensormap?
function M.is(v) return getmetatable(v) == TensorMap end

util.methods(TensorMap, "tensormap", "tm")

return M
