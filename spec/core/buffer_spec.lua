-- Device and pinned host buffers: argument checks (CPU) and round trips (GPU).
local ffi = require("ffi")
local cuasync = require("cuasync")
local H = require("helper")

describe("cuasync.alloc", function()
  local bad = {
    { 0, "cuasync.alloc: bytes must be a positive integer (got 0)" },
    { -16, "cuasync.alloc: bytes must be a positive integer (got -16)" },
    { 1.5, "cuasync.alloc: bytes must be a positive integer (got 1.5)" },
    { "64", 'cuasync.alloc: bytes must be a positive integer (got "64")' },
    { nil, "cuasync.alloc: bytes must be a positive integer (got nil)" },
    { 1 / 0, "cuasync.alloc: bytes must be a positive integer (got inf)" },
  }
  for i, c in ipairs(bad) do
    it("rejects bad size " .. i, function()
      assert.has.error(function() cuasync.alloc(c[1]) end, c[2])
    end)
  end
  it("rejects a bad pinned size", function()
    assert.has.error(function() cuasync.host_alloc(0) end, "cuasync.host_alloc: bytes must be a positive integer (got 0)")
  end)

  local gpu_it = H.gpu_it(it, pending)

  gpu_it("round-trips fresh random bytes host -> device -> device -> host #gpu", function()
    local n = 2 ^ 20
    local src = H.random_bytes(n)
    local a, b = cuasync.alloc(n), cuasync.alloc(n)
    b:fill(0xA5)
    a:upload(src)
    b:upload(a)
    local back = b:download()
    assert.equal(0, ffi.C.memcmp(back, src, n))
    -- offsets and partial ranges
    b:fill(0x5A)
    b:upload(src, 4096, 1000)
    local part = b:download("uint8_t", 8192)
    assert.equal(0, ffi.C.memcmp(part + 1000, src, 4096))
    assert.equal(0x5A, part[999])
    assert.equal(0x5A, part[5096])
    a:close(); a:close()   -- idempotent
    b:close()
  end)

  gpu_it("downloads typed arrays and into pinned memory #gpu", function()
    local n = 4096
    local src = ffi.new("float[?]", n)
    for i = 0, n - 1 do src[i] = H.random_u32() / 2 ^ 16 end
    local d = cuasync.alloc(n * 4)
    d:upload(src)
    local f = d:download("float")
    for i = 0, n - 1 do assert.equal(src[i], f[i]) end
    local pinned = cuasync.host_alloc(n * 4)
    ffi.fill(pinned.ptr, n * 4, 0xFF)
    d:download_to(pinned)
    assert.equal(0, ffi.C.memcmp(pinned.ptr, src, n * 4))
    local typed = pinned:as("float")   -- the element type; a pointer type is refused by name
    assert.equal(src[5], typed[5])
    assert.has.error(function() pinned:as("float *") end,
      'cuasync.host_buffer.as: ctype must be the element type, not a pointer (got "float *"): as("float") returns a float *')
    pinned:close(); pinned:close()
    d:close()
  end)

  gpu_it("rejects out-of-range and closed-buffer use #gpu", function()
    local d = cuasync.alloc(256)
    assert.has.error(function() d:upload(("x"):rep(300)) end, "cuasync.buffer.upload: offset 0 + bytes 300 exceeds the buffer's 256 bytes")
    assert.has.error(function() d:upload("abc", 8) end, "cuasync.buffer.upload: bytes = 8 but the string holds 3")
    assert.has.error(function() d:upload(ffi.cast("void *", 0)) end, "cuasync.buffer.upload: bytes is required when the host data is a pointer")
    assert.has.error(function() d:download("float", 65) end, "cuasync.buffer.download: 65 elements of 4 bytes exceed the buffer's 256 bytes")
    assert.has.error(function() d:fill(256) end, "cuasync.buffer.fill: byte must be an integer 0..255 (got 256)")
    assert.has.error(function() d:upload({}) end, "cuasync.buffer.upload: host data must be a string, a host buffer or cdata (got table)")
    d:close()
    assert.has.error(function() d:download() end, "cuasync.buffer.download: the buffer is closed")
  end)

  gpu_it("reports an impossible allocation with the driver's error #gpu", function()
    local ok, err = pcall(cuasync.alloc, 2 ^ 50)
    assert.is_false(ok)
    assert.equal("cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (out of memory) while allocating 1125899906842624 bytes of device memory", tostring(err))
    assert.equal("CUDA_ERROR_OUT_OF_MEMORY", err.code)
    assert.is_false(err.sticky)
  end)
end)
