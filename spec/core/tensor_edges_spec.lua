-- Tensor maps on the GPU at their edges (spec/support/kernels/tensor_probe.cu): the map arrives 64-byte
-- aligned and intact; a box hanging over the tensor loads zeros or NaN there; a store clips;
-- replace_address moves a map; an im2col load walks the pixel box. Fresh random data, poisoned
-- outputs, every element checked.
local ffi = require("ffi")
local bit = require("bit")
local cuasync = require("cuasync")
local H = require("helper")

local POISON = 0xA5A5A5A5

describe("tensormap edges", function()
  local gpu_it = H.gpu_it(it, pending)
  local mod
  local function kernel(name, sig)
    mod = mod or cuasync.program{ file = "spec/support/kernels/tensor_probe.cu" }:compile()
    return mod:kernel(name, sig)
  end

  -- One 2D load at (c0, c1) through tm; returns the image as uint32 words.
  local function image(tm, c0, c1)
    local k = kernel("tensor_image_2d", "tensormap, ptr, u32, u32, i32, i32, ptr")
    local bytes = tm.box_bytes + 256
    local out, status = cuasync.alloc(bytes), cuasync.alloc(8)
    out:fill(0); status:fill(0)
    k:launch({ grid = 1, block = 256, smem = bytes }, tm, out, tm.box_bytes, bytes, c0, c1, status)
    cuasync.synchronize()
    assert.equal(1, status:download("uint32_t", 1)[0], "the load did not complete")
    local img = out:download("uint32_t", bytes / 4)
    for i = tm.box_bytes / 4, bytes / 4 - 1 do assert.equal(POISON, img[i], "a load wrote past its box") end
    out:close(); status:close()
    return img
  end

  gpu_it("passes the map by value, 64-byte aligned and intact #gpu", function()
    local buf = cuasync.alloc(2 ^ 20)
    local tm = cuasync.tensormap{ buffer = buf, dtype = "f32", dims = { 256, 64 }, box = { 32, 16 }, swizzle = "128B" }
    local out = cuasync.alloc(17 * 8)
    out:fill(0xEE)
    kernel("tensormap_echo", "tensormap, ptr"):launch({ grid = 1, block = 32 }, tm, out)
    cuasync.synchronize()
    local got = out:download("uint64_t", 17)
    assert.equal(0, tonumber(got[0]))
    for i = 0, 15 do assert.equal(tm.map.opaque[i], got[1 + i], "word " .. i .. " of the map changed on the way") end
    buf:close(); out:close()
  end)

  for _, fill in ipairs({ "zero", "nan" }) do
    gpu_it(("a box over the edge loads %s there #gpu"):format(fill), function()
      local W, Hh = 4 * (20 + H.random_u32() % 20), 20 + H.random_u32() % 20
      local mat, h = H.random_words(W * Hh)
      local tm = cuasync.tensormap{ buffer = mat, dtype = "f32", dims = { W, Hh }, box = { 32, 8 }, oob_fill = fill }
      for _, at in ipairs({ { W - 12, Hh - 3 }, { -8, -2 }, { W - 32, -7 }, { 4, 4 } }) do
        local img = image(tm, at[1], at[2])
        for y = 0, 7 do
          for x = 0, 31 do
            local gx, gy = at[1] + x, at[2] + y
            local got = img[y * 32 + x]
            if gx >= 0 and gx < W and gy >= 0 and gy < Hh then
              assert.equal(h[gy * W + gx], got)
            elseif fill == "zero" then
              assert.equal(0, got, ("(%d, %d) outside the tensor"):format(gx, gy))
            else
              assert.is_true(bit.band(got, 0x7F800000) == 0x7F800000 and bit.band(got, 0x7FFFFF) ~= 0,
                ("(%d, %d) outside the tensor is 0x%08x, not a NaN"):format(gx, gy, got))
            end
          end
        end
      end
      mat:close()
    end)
  end

  gpu_it("a store clips at the far edges #gpu", function()
    local W, Hh = 4 * (20 + H.random_u32() % 20), 20 + H.random_u32() % 20
    local out = cuasync.alloc(W * Hh * 4)
    local tm = cuasync.tensormap{ buffer = out, dtype = "u32", dims = { W, Hh }, box = { 32, 8 } }
    local k = kernel("tensor_store_box_2d", "tensormap, u32, u32, i32, i32")
    for _, at in ipairs({ { W - 12, Hh - 3 }, { W - 28, Hh - 1 }, { 8, 4 }, { 0, Hh - 8 } }) do
      out:fill(0xA5)
      local base = H.random_u32() % 2 ^ 30
      k:launch({ grid = 1, block = 128, smem = tm.box_bytes }, tm, base, tm.box_bytes, at[1], at[2])
      cuasync.synchronize()
      local got = out:download("uint32_t", W * Hh)
      for gy = 0, Hh - 1 do
        for gx = 0, W - 1 do
          local x, y = gx - at[1], gy - at[2]
          local want = (x >= 0 and x < 32 and y >= 0 and y < 8) and base + y * 32 + x or POISON
          if got[gy * W + gx] ~= want then
            error(("store at (%d, %d): element (%d, %d) is 0x%x, expected 0x%x"):format(at[1], at[2], gx, gy,
                  got[gy * W + gx], want))
          end
        end
      end
    end
    out:close()
  end)

  -- Measured on the H200, pinned so that a change shows: a load whose innermost coordinate is
  -- not a whole 16-byte unit, and a store at a negative coordinate, fail the launch with
  -- CUDA_ERROR_ILLEGAL_INSTRUCTION (a sticky error: each runs in its own process).
  local TRAP = [[
local cuasync = require("cuasync")
local m = cuasync.alloc(64 * 32 * 4)
local tm = cuasync.tensormap{ buffer = m, dtype = "u32", dims = { 64, 32 }, box = { 32, 8 } }
local mod = cuasync.program{ file = "spec/support/kernels/tensor_probe.cu" }:compile()
local out, st = cuasync.alloc(2048), cuasync.alloc(8)
if KIND == "load" then
  mod:kernel("tensor_image_2d", "tensormap, ptr, u32, u32, i32, i32, ptr"):launch({ grid = 1, block = 64, smem = 2048 },
    tm, out, tm.box_bytes, 2048, C0, C1, st)
else
  mod:kernel("tensor_store_box_2d", "tensormap, u32, u32, i32, i32"):launch({ grid = 1, block = 64, smem = 1024 },
    tm, 7, tm.box_bytes, C0, C1)
end
local ok, err = pcall(cuasync.synchronize)
print(ok and "RAN" or err)
]]
  gpu_it("a load at an inner coordinate off the 16-byte grid, or a store at a negative one, traps #gpu", function()
    local function run(kind, c0, c1)
      local ok, out = H.luajit(("local KIND, C0, C1 = %q, %d, %d\n"):format(kind, c0, c1) .. TRAP)
      assert.is_true(ok, out)
      return out
    end
    assert.truthy(run("load", -4, -1):find("RAN", 1, true))
    assert.truthy(run("store", 4, 28):find("RAN", 1, true))
    for _, c in ipairs({ { "load", 1, 0 }, { "load", -1, 0 }, { "store", -8, 0 }, { "store", 0, -2 } }) do
      local out = run(c[1], c[2], c[3])
      assert.truthy(out:find("CUDA_ERROR_ILLEGAL_INSTRUCTION", 1, true), c[1] .. " at " .. c[2] .. "," .. c[3] .. ": " .. out)
    end
  end)

  gpu_it("replace_address moves a map to another buffer, with the same rules #gpu", function()
    local W, Hh = 128, 32
    local a = H.random_words(W * Hh)
    local b, hb = H.random_words(W * Hh)
    local tm = cuasync.tensormap{ buffer = a, dtype = "u32", dims = { W, Hh }, box = { 32, 8 } }
    local before = ffi.new("uint64_t[16]")
    ffi.copy(before, tm.map, 128)
    assert.equal(tm, tm:replace_address(b))
    assert.equal(b.ptr, tm.address)
    assert.is_true(ffi.C.memcmp(before, tm.map, 128) ~= 0, "the map's bytes did not change")
    local img = image(tm, 32, 8)
    for y = 0, 7 do for x = 0, 31 do assert.equal(hb[(8 + y) * W + 32 + x], img[y * 32 + x]) end end
    local small = cuasync.alloc(1024)
    assert.has.error(function() tm:replace_address(small) end,
      "cuasync.tensormap.replace_address: the tensor spans 16384 bytes but the new memory holds 1024")
    assert.has.error(function() tm:replace_address(b.ptr + 8) end,
      ("cuasync.tensormap.replace_address: address 0x%x is not 16-byte aligned (this map needs 16)"):format(tonumber(b.ptr) + 8))
    assert.has.error(function() tm:replace_address("a") end,
      'cuasync.tensormap.replace_address: ptr must be a device address: a positive integer up to 2^53, a uint64_t or a pointer cdata (got "a")')
    assert.has.error(function() tm:replace_address() end,
      "cuasync.tensormap.replace_address: buffer (or ptr) is required: the global memory the map describes")
    small:close()
    assert.has.error(function() tm:replace_address(small) end, "cuasync.tensormap.replace_address: the buffer is closed")
    a:close(); b:close()
  end)

  -- im2col in 3D (dims {C, W, N}): from pixel (w, n) on, `pixels` pixels of `channels` channels
  -- each, walking w over the bounding box lower .. W - 1 + upper and then on to the next n; the
  -- offset shifts where each pixel is read (w + offset); outside the tensor, zeros.
  local function im2col_model(C, W, N, lower, upper, channels, pixels, c, w, n, offset, h)
    local out = {}
    for p = 0, pixels - 1 do
      for ch = 0, channels - 1 do
        local x, gc = w + offset, c + ch
        local v = 0
        if x >= 0 and x < W and n < N and gc < C then v = h[(n * W + x) * C + gc] end
        out[p * channels + ch] = v
      end
      w = w + 1
      if w > W - 1 + upper then w, n = lower, n + 1 end
    end
    return out
  end

  gpu_it("an im2col load walks the pixel box with zeros outside #gpu", function()
    local C, W, N = 8, 12 + H.random_u32() % 8, 3
    -- values base + channel + 16 w + 1024 n (a fresh random base): a misplaced pixel says which it is
    local base = (1 + H.random_u32() % 1000) * 2 ^ 20
    local h = ffi.new("uint32_t[?]", C * W * N)
    for n = 0, N - 1 do for w = 0, W - 1 do for c = 0, C - 1 do h[(n * W + w) * C + c] = base + c + 16 * w + 1024 * n end end end
    local mat = cuasync.alloc(C * W * N * 4)
    mat:upload(h, C * W * N * 4)
    local lower, upper, channels, pixels = -1, -1, 4, 32
    local tm = cuasync.tensormap{ buffer = mat, dtype = "u32", dims = { C, W, N },
      im2col = { lower = { lower }, upper = { upper }, channels = channels, pixels = pixels } }
    assert.equal(channels * pixels * 4, tm.box_bytes)
    assert.truthy(tm:describe():find("im2col lower {-1} upper {-1}, 4 channels x 32 pixels (512 bytes)", 1, true))
    local k = kernel("tensor_image_im2col", "tensormap, ptr, u32, u32, i32, i32, i32, u32, ptr")
    local bytes = tm.box_bytes + 256
    local out, status = cuasync.alloc(bytes), cuasync.alloc(8)
    for _, at in ipairs({ { 0, -1, 0, 0 }, { 4, 3, 0, 2 }, { 0, W - 3, 1, 1 } }) do
      out:fill(0); status:fill(0)
      k:launch({ grid = 1, block = 128, smem = bytes }, tm, out, tm.box_bytes, bytes, at[1], at[2], at[3], at[4], status)
      cuasync.synchronize()
      assert.equal(1, status:download("uint32_t", 1)[0], "the im2col load did not complete")
      local img = out:download("uint32_t", bytes / 4)
      local want = im2col_model(C, W, N, lower, upper, channels, pixels, at[1], at[2], at[3], at[4], h)
      for i = 0, channels * pixels - 1 do
        if img[i] ~= want[i] then
          local got = {}
          for p = 0, pixels - 1 do
            local v = img[p * channels]
            got[#got + 1] = v == 0 and "0" or ("c%d/w%d/n%d"):format(v % 16, math.floor((v - base) / 16) % 64, math.floor((v - base) / 1024) % 1024)
          end
          error(("im2col at c=%d w=%d n=%d offset %d: word %d (pixel %d, channel %d) is 0x%x, expected 0x%x; first channels: %s"):format(
            at[1], at[2], at[3], at[4], i, math.floor(i / channels), i % channels, img[i], want[i], table.concat(got, " ")))
        end
      end
      for i = channels * pixels, bytes / 4 - 1 do assert.equal(POISON, img[i]) end
    end
    mat:close(); out:close(); status:close()
  end)
end)
