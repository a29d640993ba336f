-- Test data for device buffers (kernels-src/data.cu, compiled once per process) and host memory
-- (host buffers, cdata arrays) alike: buf:fill_random, buf:poison, hbuf:fill_random, hbuf:poison
-- (installed on buffer.lua's classes: init.lua loads this file) and cuasync.fill_random, .poison,
-- .compare. The generator is counter-based (data.cu: SplitMix64's output at counter i, keyed by
-- the seed): element i depends on (seed, i) alone, and the host computes the same bits. The poison
-- is 0x7FFA in every 16-bit half, a positive quiet NaN as f16, bf16, f32 and f64: LuaJIT (2.1, GC64)
-- reads a negative NaN out of an FFI array as whatever its tag bits say (0xFFFFFFFF, fill(0xFF)'s,
-- comes back nil; others as a boolean, a string or a table with no object behind it); a positive
-- NaN comes back as the number nan.
local ffi = require("ffi")
local bit = require("bit")
local util = require("cuasync.util")
local buffer = require("cuasync.buffer")
local program = require("cuasync.program")

local M = {}
-- name -> bytes, the ctype its elements are read and written through, the integer range or the
-- float kind (its largest finite value, default tolerances, how a value is printed)
local DTYPES = {
  u8 = { size = 1, ctype = "uint8_t", min = 0, max = 255 }, i8 = { size = 1, ctype = "int8_t", min = -128, max = 127 },
  u16 = { size = 2, ctype = "uint16_t", min = 0, max = 65535 }, i16 = { size = 2, ctype = "int16_t", min = -32768, max = 32767 },
  u32 = { size = 4, ctype = "uint32_t", min = 0, max = 2 ^ 32 - 1 }, i32 = { size = 4, ctype = "int32_t", min = -2 ^ 31, max = 2 ^ 31 - 1 },
  f16 = { size = 2, ctype = "uint16_t", float = "f16", largest = 65504, rtol = 1e-3, atol = 1e-8, fmt = "%.5g" },
  bf16 = { size = 2, ctype = "uint16_t", float = "bf16", largest = 3.3895313892515355e38, rtol = 1e-2, atol = 1e-8, fmt = "%.5g" },
  f32 = { size = 4, ctype = "float", float = "f32", largest = 3.4028234663852886e38, rtol = 1e-5, atol = 1e-8, fmt = "%.9g" },
  f64 = { size = 8, ctype = "double", float = "f64", largest = 1.7976931348623157e308, rtol = 1e-5, atol = 1e-8, fmt = "%.17g" },
}
local NAMES = "bf16, f16, f32, f64, i8, i16, i32, u8, u16, u32"
-- the element type a cdata array is declared with -> its dtype
local OF_CTYPE = { float = "f32", double = "f64", ["unsigned char"] = "u8", char = "i8", ["signed char"] = "i8",
  ["unsigned short"] = "u16", short = "i16", ["unsigned int"] = "u32", int = "i32" }
M.POISON = 0x7FFA   -- every 16-bit half of a poisoned buffer

local function dtype_of(where, name)
  local d = DTYPES[name]
  if not d then util.fail(where, ("dtype must be one of %s (got %s)"):format(NAMES, util.describe(name))) end
  return d
end

-- -- Memory a helper is given: a device buffer, a host buffer, a cdata array (or pointer) ----------
-- -> { device = buf | nil, ptr (host), bytes (nil: a pointer's), dtype (a cdata array's, or nil) }
local function memory(where, name, v)
  if ffi.istype(buffer.buffer_t, v) then
    if v.ptr == 0 then util.fail(where, name .. " is a closed buffer") end
    return { device = v, bytes = tonumber(v.nbytes) }
  elseif ffi.istype(buffer.host_buffer_t, v) then
    if v.ptr == nil then util.fail(where, name .. " is a closed host buffer") end
    return { ptr = ffi.cast("uint8_t *", v.ptr), bytes = tonumber(v.nbytes) }
  elseif type(v) == "cdata" then
    local t = tostring(ffi.typeof(v))
    local elem = t:match("^ctype<(.-)%s*%b[]>$")
    if elem then return { ptr = ffi.cast("uint8_t *", v), bytes = ffi.sizeof(v), dtype = OF_CTYPE[elem] } end
    if t:match("%*>$") then return { ptr = ffi.cast("uint8_t *", v), dtype = OF_CTYPE[t:match("^ctype<(.-)%s*%*>$")] } end
  elseif type(v) == "string" and where == "compare" then
    return { ptr = ffi.cast("const uint8_t *", v), bytes = #v, keep = v }
  end
  util.fail(where, ("%s must be a device buffer, a host buffer or a cdata array (got %s)"):format(name, util.describe(v)))
end

-- The element count of m as dtype d: refuses a size that is not a whole number of elements.
local function count(where, name, m, d, dname)
  if m.bytes % d.size == 0 then return m.bytes / d.size end
  util.fail(where, ("%s holds %d bytes, not a whole number of %s elements (%d bytes each)"):format(name, m.bytes, dname, d.size))
end

-- -- The device side: kernels-src/data.cu, compiled on first use, once per process --------------
local kernels
local function device_kernel(name)
  if kernels and kernels.mod.handle.loaded == 0 then kernels = nil end   -- lost with cuasync.reset(): load again
  if not kernels then
    kernels = { mod = program.new{ file = "data.cu" }:compile() }
    kernels.poison = kernels.mod:kernel("poison", "ptr, u64")
  end
  kernels[name] = kernels[name] or kernels.mod:kernel(name, name:match("^fill") and "ptr, u64, u64, f64, f64" or "ptr, ptr, u64, f64, f64, ptr")
  return kernels[name]
end

local function grid(n) return math.max(1, math.min(1024, math.ceil(n / 256))) end
-- -- The generator (kernels-src/data.cu computes the same bits) ----------------------------------
local u64 = ffi.typeof("uint64_t")
local GOLDEN = 0x9E3779B97F4A7C15ULL
local function mix64(z)
  z = bit.bxor(z, bit.rshift(z, 30)) * 0xBF58476D1CE4E5B9ULL
  z = bit.bxor(z, bit.rshift(z, 27)) * 0x94D049BB133111EBULL
  return bit.bxor(z, bit.rshift(z, 31))
end

-- f32 bits -> f16 / bf16 bits, rounded to nearest even (as __float2half_rn, __float2bfloat16_rn)
local function round_bits(bits, drop)
  local half, rem, mid = bit.rshift(bits, drop), bit.band(bits, bit.lshift(1, drop) - 1), bit.lshift(1, drop - 1)
  if rem > mid or (rem == mid and bit.band(half, 1) == 1) then half = half + 1 end
  return half
end
local function to_bf16(b) return bit.band(round_bits(b, 16), 0xFFFF) end
local function to_f16(b)
  local sign, e, mant = bit.band(bit.rshift(b, 16), 0x8000), bit.band(bit.rshift(b, 23), 0xFF) - 112, bit.band(b, 0x7FFFFF)
  if e >= 31 then return bit.bor(sign, 0x7C00) end          -- beyond f16 (the fills never are: hi is checked)
  if e <= 0 then                                            -- an f16 subnormal, or zero
    if e < -10 then return sign end
    return bit.bor(sign, round_bits(bit.bor(mant, 0x800000), 14 - e))
  end
  return bit.bor(sign, round_bits(bit.bor(bit.lshift(e, 23), mant), 13))   -- a carry rounds into the exponent, as it should
end

local scratch = ffi.new("union { float f; uint32_t u; }")
local function host_fill(p, n, d, key, lo, hi)
  local step = hi - lo
  if d.float == "f64" then
    local q = ffi.cast("double *", p)
    for i = 0, n - 1 do q[i] = lo + step * (tonumber(bit.rshift(mix64(key + (i + 1) * GOLDEN), 11)) * 2 ^ -53) end
  elseif d.float then
    local q, conv = ffi.cast(d.float == "f32" and "float *" or "uint16_t *", p), d.float == "f16" and to_f16 or to_bf16
    for i = 0, n - 1 do
      local v = lo + step * (tonumber(bit.rshift(mix64(key + (i + 1) * GOLDEN), 40)) * 2 ^ -24)
      if d.float == "f32" then q[i] = v else scratch.f = v; q[i] = conv(scratch.u) end
    end
  else
    local q, range = ffi.cast(d.ctype .. " *", p), ffi.cast(u64, step)
    for i = 0, n - 1 do q[i] = lo + tonumber(bit.rshift(bit.rshift(mix64(key + (i + 1) * GOLDEN), 32) * range, 32)) end
  end
end

-- -- fill_random -------------------------------------------------------------------------------
local next_seed = 0
local function fill_random(where, dst, o)
  o = o == nil and {} or o
  util.kind(where, "options", o, "table")
  util.known_fields(where, o, { dtype = true, seed = true, lo = true, hi = true, stream = true })
  local m = memory(where, "the destination", dst)
  if not m.bytes then util.fail(where, "the destination is a pointer: give a cdata array (its size is the fill's)") end
  local dname = o.dtype or m.dtype
  if dname == nil then util.fail(where, ("dtype is required (one of %s)"):format(NAMES)) end
  local d = dtype_of(where, dname)
  local n = count(where, m.device and "the buffer" or "the destination", m, d, dname)
  if o.seed ~= nil then util.int_in(where, "seed", o.seed, 0, 2 ^ 53) end
  local lo, hi = o.lo or (d.float and -1 or d.min), o.hi or (d.float and 1 or d.max + 1)
  for _, f in ipairs({ { "lo", lo, 0 }, { "hi", hi, 1 } }) do
    if not d.float then util.int_in(where, f[1], f[2], d.min + f[3], d.max + f[3])
    elseif type(f[2]) ~= "number" or not (math.abs(f[2]) <= d.largest) then
      util.fail(where, ("%s must be a finite %s value, at most %s in magnitude (got %s)"):format(f[1], dname, util.describe(d.largest), util.describe(f[2])))
    end
  end
  if not (lo < hi) then util.fail(where, ("lo must be below hi (got lo = %s, hi = %s): the values are in [lo, hi)"):format(util.describe(lo), util.describe(hi))) end
  if o.stream ~= nil and not m.device then util.fail(where, "stream is for a device buffer (a host fill is done when it returns)") end
  local seed = o.seed
  if seed == nil then next_seed = next_seed + 1; seed = next_seed end   -- after the checks: a refused call takes none
  local key = mix64(ffi.cast(u64, seed))
  if n == 0 then return dst, seed end
  if m.device then
    device_kernel("fill_" .. dname):launch({ grid = grid(n), block = 256, stream = o.stream }, dst, n, key, lo, hi)
  else
    host_fill(m.ptr, n, d, key, lo, hi)
  end
  return dst, seed
end

-- -- poison ------------------------------------------------------------------------------------
local function poison(where, dst, stream)
  local m = memory(where, "the destination", dst)
  if not m.bytes then util.fail(where, "the destination is a pointer: give a cdata array (its size is the poison's)") end
  if m.device then
    device_kernel("poison"):launch({ grid = grid(m.bytes / 4), block = 256, stream = stream }, dst, m.bytes)
  else
    if stream ~= nil then util.fail(where, "stream is for a device buffer (host memory is poisoned when it returns)") end
    local h = ffi.cast("uint16_t *", m.ptr)
    for i = 0, m.bytes / 2 - 1 do h[i] = M.POISON end
    if m.bytes % 2 == 1 then m.ptr[m.bytes - 1] = 0xFA end
  end
  return dst
end

-- -- compare -----------------------------------------------------------------------------------
-- f16 bits -> the number (exact), bf16 bits -> the f32 bits of the same value
local function f16_value(h)
  local e, mant = bit.band(bit.rshift(h, 10), 0x1F), bit.band(h, 0x3FF)
  local v = e == 31 and (mant ~= 0 and 0 / 0 or 1 / 0) or e == 0 and mant * 2 ^ -24 or (1024 + mant) * 2 ^ (e - 25)
  return h >= 0x8000 and -v or v
end
local f32, f64 = ffi.new("union { uint32_t u; float f; }"), ffi.new("union { uint64_t q; double d; }")

-- A reader of host memory p as dtype d: i -> element i as a number. A float's bits are looked at
-- first: any NaN is returned as the number nan, never read through the FFI (see the top).
local function reader(p, d)
  if d.float == "f32" then
    local u, f = ffi.cast("uint32_t *", p), ffi.cast("float *", p)
    return function(i) return u[i] % 0x80000000 > 0x7F800000 and 0 / 0 or f[i] end
  elseif d.float == "f64" then
    local u, f = ffi.cast("uint32_t *", p), ffi.cast("double *", p)   -- little-endian: word 2i + 1 is the high one
    return function(i) local h = u[2 * i + 1] % 0x80000000
      return (h > 0x7FF00000 or (h == 0x7FF00000 and u[2 * i] ~= 0)) and 0 / 0 or f[i] end
  elseif d.float then
    local h = ffi.cast("uint16_t *", p)
    if d.float == "f16" then return function(i) return f16_value(h[i]) end end
    return function(i) local b = h[i] * 65536   -- bf16: the top half of an f32
      if b % 0x80000000 > 0x7F800000 then return 0 / 0 end
      f32.u = b
      return f32.f end
  end
  local q = ffi.cast(d.ctype .. " *", p)
  return function(i) return tonumber(q[i]) end
end

-- Whether element i of p is the poison (a 1-byte dtype never says so: 0xFA and 0x7F are values).
local function poisoned(p, i, d)
  for j = 0, d.size - 1 do if p[i * d.size + j] ~= (j % 2 == 1 and 0x7F or 0xFA) then return false end end
  return d.size >= 2
end

local function show(v, d)
  if v ~= v or v == 1 / 0 or v == -1 / 0 then return v ~= v and "nan" or v > 0 and "inf" or "-inf" end
  return (d.fmt or "%.0f"):format(v)
end

-- The one message of both paths.
local function verdict(i, g, w, bad, n, worst, d, poison)
  return ("first mismatch at [%d] got %s%s want %s, %d of %d differ, max error %s"):format(i, show(g, d),
    poison and " (the poison: never written)" or "", show(w, d), bad, n, (d.float and worst == worst) and ("%.3g"):format(worst) or show(worst, d))
end

-- |got - want| <= atol + rtol |want| (equal values agree, two NaNs agree, an infinity only with itself)
local function host_compare(g, w, n, d, atol, rtol)
  local rg, rw, bad, first, worst = reader(g.ptr, d), reader(w.ptr, d), 0, nil, 0
  for i = 0, n - 1 do
    local a, b = rg(i), rw(i)
    if not (a == b or (a ~= a and b ~= b)) then
      local e = math.abs(a - b)
      if e ~= e then worst = e elseif e > worst then worst = e end
      if e == 1 / 0 or not (e <= atol + rtol * math.abs(b)) then
        bad = bad + 1
        first = first or i
      end
    end
  end
  if bad > 0 then return false, verdict(first, rg(first), rw(first), bad, n, worst, d, poisoned(g.ptr, first, d)) end
  return true
end

local function device_compare(g, w, n, d, dname, atol, rtol)
  local out = buffer.alloc(24)
  out:upload(ffi.new("uint64_t[3]", 0, 0xFFFFFFFFFFFFFFFFULL, 0))
  device_kernel("compare_" .. dname):launch({ grid = grid(n), block = 256 }, g.device, w.device, n, atol, rtol, out)
  local r = out:download("uint64_t", 3); out:close()
  if r[0] == 0 then return true end
  local i = tonumber(r[1])
  local eg, ew = ffi.new("uint8_t[8]"), ffi.new("uint8_t[8]")   -- element i of each side, alone
  g.device:download_to(eg, d.size, i * d.size)
  w.device:download_to(ew, d.size, i * d.size)
  f64.q = r[2]
  return false, verdict(i, reader(eg, d)(0), reader(ew, d)(0), tonumber(r[0]), n, f64.d, d, poisoned(eg, 0, d))
end

function M.compare(got, want, o)
  local where = "compare"
  o = o == nil and {} or o
  util.kind(where, "options", o, "table")
  util.known_fields(where, o, { dtype = true, rtol = true, atol = true, n = true })
  local g, w = memory(where, "got", got), memory(where, "want", want)
  local dname = o.dtype or g.dtype or w.dtype
  if dname == nil then util.fail(where, ("dtype is required: got and want are not typed arrays (one of %s)"):format(NAMES)) end
  local d = dtype_of(where, dname)
  for _, f in ipairs({ "rtol", "atol" }) do
    local v = o[f]
    if v ~= nil and not (type(v) == "number" and v >= 0) then util.fail(where, ("%s must be a number >= 0 (got %s)"):format(f, util.describe(v))) end
  end
  local rtol, atol = o.rtol or d.rtol or 0, o.atol or d.atol or 0
  local n = o.n
  if n ~= nil then
    util.count(where, "n", n, true)
    for _, s in ipairs({ { "got", g }, { "want", w } }) do
      if s[2].bytes and s[2].bytes < n * d.size then
        util.fail(where, ("%s holds %d bytes, fewer than n = %d %s elements (%d bytes)"):format(s[1], s[2].bytes, n, dname, n * d.size))
      end
    end
  else
    if not (g.bytes and w.bytes) then util.fail(where, "got or want is a pointer: give n, the elements to compare") end
    local ng, nw = count(where, "got", g, d, dname), count(where, "want", w, d, dname)
    if ng ~= nw then util.fail(where, ("got holds %d bytes and want %d (the sizes must be equal, or give n)"):format(g.bytes, w.bytes)) end
    n = ng
  end
  if g.device and w.device then return device_compare(g, w, n, d, dname, atol, rtol) end
  -- host memory on one side at least: the device side is downloaded, and both compared here
  for _, s in ipairs({ g, w }) do
    if s.device then s.keep = s.device:download("uint8_t", n * d.size); s.ptr = s.keep end
  end
  return host_compare(g, w, n, d, atol, rtol)
end

function M.fill_random(dst, o) return fill_random("fill_random", dst, o) end
function M.poison(dst, stream) return poison("poison", dst, stream) end
local Buffer, HostBuffer = buffer.Buffer, buffer.HostBuffer

-- buf:fill_random{ dtype, seed, lo, hi, stream } -> buf, seed: fresh random elements on the device.
function Buffer:fill_random(o) return fill_random("buffer.fill_random", self, o) end
-- buf:poison([stream]) -> buf: every 16-bit half 0x7FFA (see above).
function Buffer:poison(stream) return poison("buffer.poison", self, stream) end
-- hbuf:fill_random{ dtype, seed, lo, hi } -> hbuf, seed: the same elements as buf:fill_random's.
function HostBuffer:fill_random(o) return fill_random("host_buffer.fill_random", self, o) end
function HostBuffer:poison() return poison("host_buffer.poison", self) end

return M
