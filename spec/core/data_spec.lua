-- Test data (lua/cuasync/data.lua, kernels-src/data.cu): fill_random, poison and compare on the host
-- (CPU) and on the device (GPU), which must give the same bits and the same messages.
local ffi = require("ffi")
local bit = require("bit")
local cuasync = require("cuasync")
local H = require("helper")

local DTYPES = { u8 = 1, i8 = 1, u16 = 2, i16 = 2, u32 = 4, i32 = 4, f16 = 2, bf16 = 2, f32 = 4, f64 = 8 }
local ORDER = { "u8", "i8", "u16", "i16", "u32", "i32", "f16", "bf16", "f32", "f64" }

-- f16 / bf16 bits -> value, independent of data.lua
local bf = ffi.new("union { uint32_t u; float f; }")   -- once: each ffi.new of a declaration makes a new ctype
local function half(h, kind)
  if kind == "bf16" then
    local u = bf
    u.u = h * 65536
    return u.f
  end
  local e, m = bit.band(bit.rshift(h, 10), 0x1F), bit.band(h, 0x3FF)
  local v = e == 0 and m * 2 ^ -24 or (1024 + m) * 2 ^ (e - 25)
  return h >= 0x8000 and -v or v
end

describe("cuasync.poison", function()
  it("is a positive quiet NaN LuaJIT reads back as the number nan (fill(0xFF) is not)", function()
    local a = ffi.new("uint8_t[16]")
    cuasync.poison(a)
    for i = 0, 15 do assert.equal(i % 2 == 1 and 0x7F or 0xFA, a[i]) end
    for _, t in ipairs({ "float", "double" }) do
      local v = ffi.cast(t .. " *", a)[0]
      assert.equal("number", type(v))
      assert.is_true(v ~= v)
      assert.equal("nan", ("%g"):format(v):gsub("^-", ""))
    end
    assert.equal(0x7FFA7FFA, ffi.cast("uint32_t *", a)[0])
    -- what the guides' poison gives: 0xFFFFFFFF, a negative NaN. Debian's LuaJIT 2.1 (GC64) hands it
    -- back as nil, so `y ~= y` is false and `%g` raises; the poison never depends on how it reads
    local f = ffi.new("float[1]")
    ffi.fill(f, 4, 0xFF)
    local v = f[0]
    assert.is_true(type(v) ~= "number" or v ~= v)
  end)

  it("poisons an odd size to the last byte, and a host array through cuasync.poison", function()
    local a = ffi.new("uint8_t[7]")
    assert.equal(a, cuasync.poison(a))
    assert.same({ 0xFA, 0x7F, 0xFA, 0x7F, 0xFA, 0x7F, 0xFA }, { a[0], a[1], a[2], a[3], a[4], a[5], a[6] })
    assert.has.error(function() cuasync.poison(ffi.cast("float *", a)) end,
      "cuasync.poison: the destination is a pointer: give a cdata array (its size is the poison's)")
    assert.has.error(function() cuasync.poison("abc") end,
      'cuasync.poison: the destination must be a device buffer, a host buffer or a cdata array (got "abc")')
  end)
end)

describe("cuasync.fill_random on the host", function()
  it("is a function of (seed, index): the same seed gives the same bits, another seed other bits", function()
    for _, dt in ipairs(ORDER) do
      local n = 1000
      local a, b, c = ffi.new("uint8_t[?]", n * DTYPES[dt]), ffi.new("uint8_t[?]", n * DTYPES[dt]), ffi.new("uint8_t[?]", n * DTYPES[dt])
      cuasync.fill_random(a, { dtype = dt, seed = 7 })
      cuasync.fill_random(b, { dtype = dt, seed = 7 })
      cuasync.fill_random(c, { dtype = dt, seed = 8 })
      assert.equal(0, ffi.C.memcmp(a, b, n * DTYPES[dt]), dt)
      assert.is_true(ffi.C.memcmp(a, c, n * DTYPES[dt]) ~= 0, dt)
      -- a prefix is the same data: element i does not depend on the size
      local p = ffi.new("uint8_t[?]", 10 * DTYPES[dt])
      cuasync.fill_random(p, { dtype = dt, seed = 7 })
      assert.equal(0, ffi.C.memcmp(a, p, 10 * DTYPES[dt]), dt)
    end
  end)

  it("pins the generator: SplitMix64's output at counter i + 1, keyed by mix(seed)", function()
    local w = ffi.new("uint32_t[3]")
    cuasync.fill_random(w, { seed = 1 })
    local function mix(z)
      z = bit.bxor(z, bit.rshift(z, 30)) * 0xBF58476D1CE4E5B9ULL
      z = bit.bxor(z, bit.rshift(z, 27)) * 0x94D049BB133111EBULL
      return bit.bxor(z, bit.rshift(z, 31))
    end
    local key = mix(1ULL)
    for i = 0, 2 do assert.equal(tonumber(bit.rshift(mix(key + (i + 1) * 0x9E3779B97F4A7C15ULL), 32)), w[i]) end
    local f = ffi.new("float[2]")
    cuasync.fill_random(f, { seed = 1, lo = 0, hi = 1 })
    assert.equal(tonumber(bit.rshift(mix(key + 0x9E3779B97F4A7C15ULL), 40)) * 2 ^ -24, f[0])
  end)

  it("stays in [lo, hi) and covers it: integers, floats, the defaults", function()
    local x = ffi.new("int32_t[20000]")
    cuasync.fill_random(x, { lo = -3, hi = 4, seed = 3 })
    local seen = {}
    for i = 0, 19999 do
      assert.is_true(x[i] >= -3 and x[i] < 4)
      seen[x[i]] = (seen[x[i]] or 0) + 1
    end
    for v = -3, 3 do assert.is_true(seen[v] > 2500 and seen[v] < 3200, tostring(seen[v])) end
    local u = ffi.new("uint8_t[4096]")
    cuasync.fill_random(u, { seed = 3 })   -- u8: 0..255 by default
    local lo, hi = 255, 0
    for i = 0, 4095 do lo, hi = math.min(lo, u[i]), math.max(hi, u[i]) end
    assert.same({ 0, 255 }, { lo, hi })
    local f = ffi.new("double[20000]")
    cuasync.fill_random(f, { seed = 3 })   -- floats: -1..1 by default
    local s, mn, mx = 0, 1, -1
    for i = 0, 19999 do s, mn, mx = s + f[i], math.min(mn, f[i]), math.max(mx, f[i]) end
    assert.is_true(mn >= -1 and mn < -0.999 and mx < 1 and mx > 0.999 and math.abs(s / 20000) < 0.02)
    local g = ffi.new("float[1000]")
    cuasync.fill_random(g, { lo = 100, hi = 101, seed = 3 })
    for i = 0, 999 do assert.is_true(g[i] >= 100 and g[i] < 101) end
  end)

  it("rounds f16 and bf16 to the nearest value (ties to even) of the f32 it draws", function()
    for _, kind in ipairs({ "f16", "bf16" }) do
      local n = 20000
      local h, f = ffi.new("uint16_t[?]", n), ffi.new("float[?]", n)
      -- a range through the f16 subnormals (|x| < 2^-14) and a wide one
      for _, r in ipairs({ { -2 ^ -12, 2 ^ -12 }, { -3000, 3000 } }) do
        cuasync.fill_random(h, { dtype = kind, seed = 11, lo = r[1], hi = r[2] })
        cuasync.fill_random(f, { dtype = "f32", seed = 11, lo = r[1], hi = r[2] })
        for i = 0, n - 1 do
          local x, v = f[i], half(h[i], kind)
          local d = math.abs(v - x)
          for _, nb in ipairs({ h[i] - 1, h[i] + 1 }) do
            if nb >= 0 and nb % 0x8000 < (kind == "f16" and 0x7C00 or 0x7F80) and (nb >= 0x8000) == (h[i] >= 0x8000) then
              local dn = math.abs(half(nb, kind) - x)
              assert.is_true(d < dn or (d == dn and h[i] % 2 == 0), ("%s %d: %.9g -> %04x"):format(kind, i, x, h[i]))
            end
          end
        end
      end
    end
  end)

  it("takes its dtype from a typed array, and a fresh seed per call where none is given", function()
    local a, b = ffi.new("float[64]"), ffi.new("float[64]")
    local _, s1 = cuasync.fill_random(a)
    local _, s2 = cuasync.fill_random(b)
    assert.equal(s1 + 1, s2)
    assert.is_true(ffi.C.memcmp(a, b, 256) ~= 0)
    local c = ffi.new("float[64]")
    cuasync.fill_random(c, { seed = s1 })
    assert.equal(0, ffi.C.memcmp(a, c, 256))
  end)

  it("refuses bad input by name", function()
    local a = ffi.new("float[4]")
    local cases = {
      { ffi.new("uint8_t[10]"), { dtype = "f32" }, "the destination holds 10 bytes, not a whole number of f32 elements (4 bytes each)" },
      { a, { dtype = "f8" }, 'dtype must be one of bf16, f16, f32, f64, i8, i16, i32, u8, u16, u32 (got "f8")' },
      { ffi.new("uint8_t[4]", 0), { dtype = nil, lo = -1 }, "lo must be an integer in 0..255 (got -1)" },
      { ffi.new("uint8_t[4]"), { hi = 257 }, "hi must be an integer in 1..256 (got 257)" },
      { a, { lo = 1, hi = 1 }, "lo must be below hi (got lo = 1, hi = 1): the values are in [lo, hi)" },
      { a, { hi = 1 / 0 }, "hi must be a finite f32 value, at most 3.4028234663852886e+38 in magnitude (got inf)" },
      { a, { dtype = "f16", lo = -1e5 }, "lo must be a finite f16 value, at most 65504 in magnitude (got -100000)" },
      { a, { seed = -1 }, "seed must be an integer in 0..9007199254740992 (got -1)" },
      { a, { seed = 1.5 }, "seed must be an integer in 0..9007199254740992 (got 1.5)" },
      { a, { sed = 1 }, "unknown field 'sed' (fields: dtype, hi, lo, seed, stream)" },
      { a, { stream = 1 }, "stream is for a device buffer (a host fill is done when it returns)" },
      { ffi.new("struct { int x; }[2]"), {}, "dtype is required (one of bf16, f16, f32, f64, i8, i16, i32, u8, u16, u32)" },
    }
    for _, c in ipairs(cases) do
      assert.has.error(function() cuasync.fill_random(c[1], c[2]) end, "cuasync.fill_random: " .. c[3])
    end
    assert.has.error(function() cuasync.fill_random(a, 5) end, "cuasync.fill_random: options must be a table (got number)")
  end)
end)

describe("cuasync.compare on the host", function()
  it("says true, or where the first mismatch is, how many differ and the largest error", function()
    local got, want = ffi.new("float[1000]"), ffi.new("float[1000]")
    cuasync.fill_random(want, { seed = 5 })
    ffi.copy(got, want, 4000)
    assert.is_true(cuasync.compare(got, want))
    got[17], got[900] = want[17] + 0.25, want[900] - 0.5
    local ok, why = cuasync.compare(got, want)
    assert.is_false(ok)
    assert.equal(("first mismatch at [17] got %.9g want %.9g, 2 of 1000 differ, max error 0.5"):format(got[17], want[17]), why)
    -- within the tolerance: agrees; rtol scales with |want|
    assert.is_true(cuasync.compare(got, want, { atol = 0.5 }))
    assert.is_false(cuasync.compare(got, want, { atol = 0.4 }))
  end)

  it("names the poison where the output was never written, for every dtype of two bytes or more", function()
    for _, dt in ipairs(ORDER) do
      local n = 64
      local got, want = ffi.new("uint8_t[?]", n * DTYPES[dt]), ffi.new("uint8_t[?]", n * DTYPES[dt])
      cuasync.fill_random(want, { dtype = dt, seed = 2, lo = 1, hi = dt:match("f") and 2 or 100 })
      ffi.copy(got, want, n * DTYPES[dt])
      cuasync.poison(got)
      ffi.copy(got, want, 3 * DTYPES[dt])   -- elements 0..2 written
      local ok, why = cuasync.compare(got, want, { dtype = dt })
      assert.is_false(ok)
      local float = dt:match("^b?f")
      local head = ("first mismatch at [3] got %s%s want "):format(float and "nan" or tostring(DTYPES[dt] == 1 and 127 or
        ({ u16 = 32762, i16 = 32762, u32 = 2147123194, i32 = 2147123194 })[dt]), DTYPES[dt] >= 2 and " (the poison: never written)" or "")
      assert.equal(head, why:sub(1, #head), dt .. ": " .. why)
      assert.truthy(why:find((", 61 of 64 differ, max error %s$"):format(float and "nan" or "%d+")), why)
    end
  end)

  it("agrees on equal infinities and on two NaNs; an infinity differs from any finite value", function()
    local got, want = ffi.new("double[4]", 1 / 0, 0 / 0, 1, 3), ffi.new("double[4]", 1 / 0, 0 / 0, 1, 1 / 0)
    local ok, why = cuasync.compare(got, want, { rtol = 1 })
    assert.is_false(ok)
    assert.equal("first mismatch at [3] got 3 want inf, 1 of 4 differ, max error inf", why)
    want[3] = 3
    assert.is_true(cuasync.compare(got, want))
  end)

  it("compares integers exactly by default, and strings and pointers (with n)", function()
    local a, b = ffi.new("int32_t[3]", 1, 2, 3), ffi.new("int32_t[3]", 1, 2, 4)
    assert.equal("first mismatch at [2] got 3 want 4, 1 of 3 differ, max error 1", select(2, cuasync.compare(a, b)))
    assert.is_true(cuasync.compare(a, b, { atol = 1 }))
    assert.is_true(cuasync.compare(a, b, { n = 2 }))
    assert.is_true(cuasync.compare(ffi.cast("int32_t *", a), b, { n = 2 }))
    assert.is_true(cuasync.compare("abc", "abc", { dtype = "u8" }))
    assert.equal("first mismatch at [1] got 98 want 120, 1 of 3 differ, max error 22", select(2, cuasync.compare("abc", "axc", { dtype = "u8" })))
  end)

  it("refuses bad input by name", function()
    local a = ffi.new("float[4]")
    local cases = {
      { a, a, { rtol = -1 }, "rtol must be a number >= 0 (got -1)" },
      { a, a, { atol = 0 / 0 }, "atol must be a number >= 0 (got nan)" },
      { a, a, { rtol = "1" }, 'rtol must be a number >= 0 (got "1")' },
      { a, a, { dtype = "f8" }, 'dtype must be one of bf16, f16, f32, f64, i8, i16, i32, u8, u16, u32 (got "f8")' },
      { a, ffi.new("float[5]"), {}, "got holds 16 bytes and want 20 (the sizes must be equal, or give n)" },
      { ffi.new("uint8_t[10]"), ffi.new("uint8_t[10]"), { dtype = "f32" }, "got holds 10 bytes, not a whole number of f32 elements (4 bytes each)" },
      { a, a, { n = 5 }, "got holds 16 bytes, fewer than n = 5 f32 elements (20 bytes)" },
      { ffi.cast("float *", a), a, {}, "got or want is a pointer: give n, the elements to compare" },
      { "abcd", "abcd", {}, "dtype is required: got and want are not typed arrays (one of bf16, f16, f32, f64, i8, i16, i32, u8, u16, u32)" },
      { a, 3, {}, "want must be a device buffer, a host buffer or a cdata array (got 3)" },
      { a, a, { tol = 1 }, "unknown field 'tol' (fields: atol, dtype, n, rtol)" },
    }
    for _, c in ipairs(cases) do
      assert.has.error(function() cuasync.compare(c[1], c[2], c[3]) end, "cuasync.compare: " .. c[4])
    end
  end)

  it("raises only its own errors on random input", function()
    local R = math.random
    math.randomseed(H.random_u32())
    local values = { 0, -1, 0.5, 1 / 0, 0 / 0, "f32", "u8", "x", true, {}, ffi.new("float[3]"), ffi.new("uint8_t[5]"),
                     ffi.cast("void *", 0), ffi.new("uint64_t", 16), function() end }
    local function v() return values[R(#values)] end
    for _ = 1, 3000 do
      local o = { dtype = R(2) == 1 and v() or nil, rtol = R(3) == 1 and v() or nil, atol = R(3) == 1 and v() or nil,
                  n = R(4) == 1 and v() or nil, seed = R(3) == 1 and v() or nil, lo = R(3) == 1 and v() or nil }
      for _, f in ipairs({ function() return cuasync.compare(v(), v(), R(5) == 1 and v() or { dtype = o.dtype, rtol = o.rtol, atol = o.atol, n = o.n }) end,
                           function() return cuasync.fill_random(v(), R(5) == 1 and v() or { dtype = o.dtype, seed = o.seed, lo = o.lo }) end,
                           function() return cuasync.poison(v()) end }) do
        local ok, err = pcall(f)
        assert.is_true(ok or tostring(err):find("cuasync%.[%w_]+: ") ~= nil, tostring(err))
      end
    end
  end)
end)

describe("kernels-src/data.cu", function()
  it("compiles on the CPU: poison, and a fill and a compare kernel per dtype", function()
    local ptx = cuasync.program{ file = "data.cu" }:ptx()
    assert.truthy(ptx:find(".entry poison(", 1, true))
    for _, dt in ipairs(ORDER) do
      assert.truthy(ptx:find(".entry fill_" .. dt .. "(", 1, true), dt)
      assert.truthy(ptx:find(".entry compare_" .. dt .. "(", 1, true), dt)
    end
    -- no contraction into an fma: the device rounds lo + (hi - lo) u as the host does, step by step
    assert.is_nil(ptx:find("fma.rn.f64", 1, true))
  end)
end)

describe("test data on the device", function()
  local gpu_it = H.gpu_it(it, pending)

  gpu_it("buf:fill_random gives the bits hbuf:fill_random gives, for every dtype #gpu", function()
    for _, dt in ipairs(ORDER) do
      for _, c in ipairs({ { n = 100003, seed = 1 }, { n = 4097, seed = 2 ^ 40 + 3, lo = dt:match("^[ui]") and 3 or -1e-3,
                                                       hi = dt:match("^[ui]") and 100 or 5 } }) do
        local bytes = c.n * DTYPES[dt]
        local d, h, back = cuasync.alloc(bytes), cuasync.host_alloc(bytes), cuasync.host_alloc(bytes)
        assert.equal(d, (d:fill_random{ dtype = dt, seed = c.seed, lo = c.lo, hi = c.hi }))
        assert.equal(h, (h:fill_random{ dtype = dt, seed = c.seed, lo = c.lo, hi = c.hi }))
        d:download_to(back)
        assert.equal(0, ffi.C.memcmp(h.ptr, back.ptr, bytes), dt)
        assert.is_true(cuasync.compare(d, h, { dtype = dt, rtol = 0, atol = 0 }))
        d:close(); h:close(); back:close()
      end
    end
  end)

  gpu_it("buf:poison writes the host's pattern, odd sizes included, and it reads back as nan #gpu", function()
    for _, bytes in ipairs({ 1, 7, 4096, 1000001 }) do
      local d = cuasync.alloc(bytes)
      d:fill(0)
      assert.equal(d, d:poison())
      local want = ffi.new("uint8_t[?]", bytes)
      cuasync.poison(want)
      assert.equal(0, ffi.C.memcmp(d:download(), want, bytes), tostring(bytes))
    end
    local f = cuasync.alloc(64):poison():download("float")
    assert.equal("number", type(f[3]))
    assert.is_true(f[3] ~= f[3])
  end)

  gpu_it("loads its kernels again after cuasync.reset() #gpu", function()
    -- in a subprocess, as every reset in the suite: a reset here would end the context other specs hold
    local ok, out = H.luajit([[
      local c = require("cuasync")
      local a = c.alloc(4096):fill_random{ dtype = "f32", seed = 3 }
      local before = a:download("uint8_t")
      c.reset()
      local b = c.alloc(4096):fill_random{ dtype = "f32", seed = 3 }
      print("SAME", require("ffi").string(before, 4096) == require("ffi").string(b:download("uint8_t"), 4096))
      print("COMPARE", c.compare(b:poison(), before, { dtype = "f32" }))
    ]], nil, 60)
    assert.is_true(ok, out)
    assert.truthy(out:find("SAME\ttrue\n", 1, true), out)
    assert.truthy(out:find("COMPARE\tfalse\tfirst mismatch at [0] got nan (the poison: never written) want ", 1, true), out)
  end)

  gpu_it("cuasync.compare on device buffers says what the host says #gpu", function()
    for _, dt in ipairs(ORDER) do
      local n = 300007
      local bytes = n * DTYPES[dt]
      local want, got = cuasync.alloc(bytes), cuasync.alloc(bytes)
      want:fill_random{ dtype = dt, seed = 4, lo = dt:match("^[ui]") and 1 or 0.5, hi = dt:match("^[ui]") and 100 or 2 }
      got:upload(want)
      assert.is_true(cuasync.compare(got, want, { dtype = dt }))
      -- plant: the poison over a stretch, and a far element with a high bit flipped
      local hw, hg = want:download("uint8_t"), want:download("uint8_t")
      local s = DTYPES[dt]
      for i = 1000 * s, 1010 * s - 1 do hg[i] = i % 2 == 1 and 0x7F or 0xFA end
      local at = 200000 * s + math.max(0, s - 2)
      hg[at] = bit.bxor(hg[at], 0x40)
      got:upload(hg)
      local ok, on_device = cuasync.compare(got, want, { dtype = dt })
      local _, on_host = cuasync.compare(hg, hw, { dtype = dt })
      local _, mixed = cuasync.compare(got, hw, { dtype = dt })
      assert.is_false(ok)
      assert.equal(on_host, on_device)
      assert.equal(on_host, mixed)
      assert.truthy(on_device:find("^first mismatch at %[1000%] got "), on_device)
      if s >= 2 then assert.truthy(on_device:find("(the poison: never written)", 1, true), on_device) end
      assert.truthy(on_device:find((", %d of %d differ"):format(s == 1 and (hw[1000] == 250 and 5 or 6) or 11, n), 1, true) or s == 1, on_device)
      assert.is_true(cuasync.compare(got, want, { dtype = dt, n = 1000 }))
      assert.has.error(function() cuasync.compare(got, cuasync.alloc(bytes + s), { dtype = dt }) end,
        ("cuasync.compare: got holds %d bytes and want %d (the sizes must be equal, or give n)"):format(bytes, bytes + s))
      want:close(); got:close()
    end
  end)
end)
