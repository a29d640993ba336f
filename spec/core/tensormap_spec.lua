-- Tensor maps on the CPU: every rule of cuTensorMapEncodeTiled / EncodeIm2col / ReplaceAddress
-- refuses a bad map with its own message before the driver (on CI there is no driver at all, so
-- a case that reached it would fail with a different message); describe() and box_bytes.
local ffi = require("ffi")
local cuasync = require("cuasync")
local H = require("helper")

local function with(base, t)
  local s = {}
  for k, v in pairs(base) do s[k] = v end
  for k, v in pairs(t) do s[k] = v end
  return s
end

local TILED = { ptr = 1024, bytes = 2 ^ 20, dtype = "u32", dims = { 64, 32 }, box = { 32, 8 } }
local IM2COL = { ptr = 1024, bytes = 2 ^ 20, dtype = "f16", dims = { 16, 10, 10, 2 },
                 im2col = { lower = { -1, -1 }, upper = { -1, -1 }, channels = 16, pixels = 64 } }
local function ic(t) return with(IM2COL.im2col, t) end

-- { changes to the base map, the message after "cuasync.tensormap: " }
local TILED_CASES = {
  { { colour = 1 }, "unknown field 'colour' (fields: box, buffer, bytes, dims, dtype, element_strides, encode, im2col, interleave, l2_promotion, load_only, oob_fill, ptr, strides, swizzle)" },
  { { buffer = 5, ptr = false }, "buffer must be a cuasync buffer (got 5)" },
  { { buffer = "x" }, "give buffer or ptr, not both" },
  { { ptr = "0x400" }, 'ptr must be a device address: a positive integer up to 2^53, a uint64_t or a pointer cdata (got "0x400")' },
  { { ptr = -16 }, "ptr must be a device address: a positive integer up to 2^53, a uint64_t or a pointer cdata (got -16)" },
  { { ptr = ffi.cast("void *", 0) }, "ptr is a NULL pointer (a NULL cdata reads as nil: give a value, or leave the field out)" },
  { { ptr = 1032 }, "address 0x408 is not 16-byte aligned (tensor maps need 16)" },
  { { bytes = -1 }, "bytes must be a positive integer (got -1)" },
  { { dtype = "u33" }, 'dtype = "u33" is not one of 16u4_align16b, 16u4_align8b, 16u6_align16b, bf16, f16, f32, f32_ftz, f64, i32, i64, tf32, tf32_ftz, u16, u32, u64, u8' },
  { { dtype = 7 }, "dtype = 7 is not one of 16u4_align16b, 16u4_align8b, 16u6_align16b, bf16, f16, f32, f32_ftz, f64, i32, i64, tf32, tf32_ftz, u16, u32, u64, u8" },
  { { dims = 64 }, "dims must be a table of integers (got number)" },
  { { dims = {} }, "dims has 0 entries (rank must be 1..5)" },
  { { dims = { 64, 32, 1, 1, 1, 1 } }, "dims has 6 entries (rank must be 1..5)" },
  { { dims = { 0, 32 } }, "dims[1] = 0 is outside 1..2^32" },
  { { dims = { 64, -3 } }, "dims[2] = -3 is outside 1..2^32" },
  { { dims = { 64, 2 ^ 32 + 1 } }, "dims[2] = 4294967297 is outside 1..2^32" },
  { { dims = { 64, 2.5 } }, "dims[2] = 2.5 is outside 1..2^32" },
  { { interleave = "8B" }, 'interleave = "8B" is not one of 16B, 32B, none' },
  { { swizzle = "96B" }, 'swizzle = "96B" is not one of 128B, 32B, 64B, none' },
  { { swizzle = 128 }, "swizzle = 128 is not one of 128B, 32B, 64B, none" },
  { { l2_promotion = "512B" }, 'l2_promotion = "512B" is not one of 128B, 256B, 64B, none' },
  { { oob_fill = "inf" }, 'oob_fill = "inf" is not one of nan, zero' },
  { { interleave = "16B" }, "interleave = 16B needs rank 3..5 (dims has 2 entries)" },
  { { interleave = "32B", dims = { 64, 32, 2 }, box = { 8, 8, 1 } }, "interleave = 32B requires swizzle = 32B (got none)" },
  { { oob_fill = "nan" }, "oob_fill = nan needs a floating-point dtype (got u32)" },
  { { interleave = "32B", swizzle = "32B", ptr = 1040, dims = { 64, 32, 2 }, box = { 8, 8, 1 } }, "address 0x410 is not 32-byte aligned (interleave = 32B needs 32)" },
  { { strides = { 256, 8192 } }, "strides has 2 entries but a rank-2 tensor has 1 (dimensions 2..2, in bytes)" },
  { { strides = { 200 } }, "strides[1] = 200 is not a multiple of 16 bytes" },
  { { strides = { 0 } }, "strides[1] = 0 is outside 1..2^40-1" },
  { { strides = { 2 ^ 40 } }, "strides[1] = 1099511627776 is outside 1..2^40-1" },
  { { strides = { 128 } }, "strides[1] = 128 is smaller than dimension 1's extent of 256 bytes (rows would overlap)" },
  { { interleave = "32B", swizzle = "32B", dims = { 64, 32, 2 }, strides = { 272, 8704 }, box = { 8, 8, 1 } }, "strides[1] = 272 is not a multiple of 32 bytes" },
  { { dims = { 64, 32, 4 }, strides = { 256, 4096 }, box = { 32, 8, 1 } }, "strides[2] = 4096 is smaller than dimension 2's extent of 8192 bytes (rows would overlap)" },
  { { bytes = 4096 }, "the tensor spans 8192 bytes but the buffer holds 4096" },
  { { dims = { 5, 32 }, strides = { 32 }, box = { 4, 8 } }, "dims[1] * 4 bytes = 20 is not a multiple of 16: a tensor store writes whole 16-byte units at the edge, past the tensor (pass load_only = true for a map only loaded from)" },
  { { load_only = 1 }, "load_only must be a boolean (got number)" },
  { { element_strides = { 1 } }, "element_strides has 1 entries but the tensor has rank 2" },
  { { element_strides = { 1, 0 } }, "element_strides[2] = 0 is outside 1..8" },
  { { element_strides = { 1, 9 } }, "element_strides[2] = 9 is outside 1..8" },
  { { box = false }, "box must be a table of integers (got boolean)" },
  { { box = { 32 } }, "box has 1 entries but the tensor has rank 2" },
  { { box = { 32, 0 } }, "box[2] = 0 is outside 1..256" },
  { { box = { 32, 257 } }, "box[2] = 257 is outside 1..256" },
  { { box = { 3, 8 } }, "box[1] * 4 bytes = 12 is not a multiple of 16 (the inner box dimension moves 16-byte units)" },
  { { swizzle = "128B", box = { 64, 8 } }, "box[1] * 4 bytes = 256 exceeds the 128B swizzle span" },
  { { swizzle = "32B", box = { 16, 8 } }, "box[1] * 4 bytes = 64 exceeds the 32B swizzle span" },
  { { dtype = "u8", swizzle = "64B", box = { 80, 8 } }, "box[1] * 1 bytes = 80 exceeds the 64B swizzle span" },
  { { dtype = "16u4_align16b", dims = { 200, 32 }, strides = { 128 }, box = { 128, 8 } }, "dims[1] = 200 is not a multiple of 128 (a packed type counts single values)" },
  { { dtype = "16u4_align8b", dims = { 63, 32 }, load_only = true, strides = { 48 }, box = { 32, 8 } }, "dims[1] = 63 is not a multiple of 2 (a packed type counts single values)" },
  { { dtype = "16u6_align16b", dims = { 256, 32 }, strides = { 192 }, box = { 64, 8 } }, "box[1] = 64 but dtype 16u6_align16b loads exactly 128 values per row" },
  { { dtype = "16u6_align16b", swizzle = "64B", dims = { 256, 32 }, strides = { 192 }, box = { 128, 8 } }, "dtype 16u6_align16b allows swizzle = none or 128B (got 64B)" },
  { { dtype = "16u6_align16b", interleave = "16B", dims = { 256, 32, 2 }, strides = { 192, 6144 }, box = { 128, 8, 1 } }, "dtype 16u6_align16b needs interleave = none (got 16B)" },
  { { dtype = "16u4_align16b", ptr = 1040, dims = { 256, 32 }, strides = { 128 }, box = { 128, 8 } }, "address 0x410 is not 32-byte aligned (dtype 16u4_align16b needs 32)" },
  { { drop = "box" }, "box is required (elements per dimension one load brings), or im2col" },
}

local IM2COL_CASES = {
  { { dims = { 16, 10 } }, "dims has 2 entries but an im2col map has rank 3..5" },
  { { im2col = 3 }, "im2col must be a table {lower, upper, channels, pixels} (got number)" },
  { { im2col = ic({ stride = 2 }) }, "unknown field 'stride' (fields: channels, lower, pixels, upper)" },
  { { box = { 16, 4, 4, 1 } }, "give box or im2col, not both (an im2col map's box is channels x pixels)" },
  { { im2col = ic({ lower = { -1 } }) }, "im2col.lower has 1 entries but a rank-4 im2col map has 2 spatial dimensions" },
  { { im2col = ic({ lower = { -1, -129 } }) }, "im2col.lower[2] = -129 is outside -128..127" },
  { { im2col = ic({ upper = { 128, 0 } }) }, "im2col.upper[1] = 128 is outside -128..127" },
  { { dims = { 16, 10, 10, 10, 2 }, im2col = ic({ lower = { 0, 0, 16 }, upper = { 0, 0, 0 } }) }, "im2col.lower[3] = 16 is outside -16..15" },
  { { dims = { 16, 4000, 2 }, im2col = ic({ lower = { -32769 }, upper = { 0 } }) }, "im2col.lower[1] = -32769 is outside -32768..32767" },
  { { im2col = ic({ lower = { 5, 0 }, upper = { -6, 0 } }) }, "im2col: spatial dimension 1 has no pixels (dims[2] = 10, lower 5, upper -6: the bounding box must have non-zero area)" },
  { { im2col = ic({ channels = 0 }) }, "im2col.channels = 0 is outside 1..256" },
  { { im2col = ic({ channels = 512 }) }, "im2col.channels = 512 is outside 1..256" },
  { { im2col = ic({ pixels = 1025 }) }, "im2col.pixels = 1025 is outside 1..1024" },
  { { im2col = ic({ pixels = "64" }) }, 'im2col.pixels = "64" is outside 1..1024' },
  { { im2col = ic({ channels = 12 }) }, "im2col.channels * 2 bytes = 24 is not a multiple of 16 (the inner box dimension moves 16-byte units)" },
  { { swizzle = "32B", im2col = ic({ channels = 64 }), dims = { 64, 10, 10, 2 } }, "im2col.channels * 2 bytes = 128 exceeds the 32B swizzle span" },
  { { oob_fill = "nan", dtype = "i32", dims = { 16, 10, 10, 2 } }, "oob_fill = nan needs a floating-point dtype (got i32)" },
}

describe("tensormap rules", function()
  it("refuses at least 40 distinct bad tiled and im2col maps, each with its own message, before the driver", function()
    local seen, n = {}, 0
    local function refuse(base, cases)
      for i, c in ipairs(cases) do
        if c[2] then
          local spec = with(base, c[1])
          if c[1].ptr == false then spec.ptr = nil end
          if c[1].drop then spec[c[1].drop], spec.drop = nil, nil end
          local ok, err = pcall(cuasync.tensormap, spec)
          assert.is_false(ok, ("case %d (%s) was accepted"):format(i, c[2]))
          err = tostring(err):gsub("^.-:%d+: ", "")
          assert.equal("cuasync.tensormap: " .. c[2], err)
          assert.is_nil(seen[err], "two cases share a message: " .. err)
          seen[err] = true
          n = n + 1
        end
      end
    end
    refuse(TILED, TILED_CASES)
    refuse(IM2COL, IM2COL_CASES)
    assert.is_true(n >= 40, ("only %d distinct refusals"):format(n))
  end)

  it("refuses a spec that is not a table and a map with no memory", function()
    assert.has.error(function() cuasync.tensormap("f32") end, "cuasync.tensormap: spec must be a table (got string)")
    assert.has.error(function() cuasync.tensormap{ dtype = "u32", dims = { 4 }, box = { 4 } } end,
      "cuasync.tensormap: buffer (or ptr) is required: the global memory the map describes")
  end)

  local gpu_it = H.gpu_it(it, pending)
  gpu_it("refuses a closed buffer, and a Blackwell packed type on a Hopper device #gpu", function()
    local b = cuasync.alloc(4096)
    b:close()
    assert.has.error(function() cuasync.tensormap{ buffer = b, dtype = "u32", dims = { 4 }, box = { 4 } } end,
      "cuasync.tensormap: the buffer is closed")
    local dev = cuasync.device(0)
    if dev.cc < 100 then
      local buf = cuasync.alloc(65536)
      assert.has.error(function()
        cuasync.tensormap{ buffer = buf, dtype = "16u4_align16b", dims = { 256, 32 }, strides = { 128 }, box = { 128, 8 } }
      end, ("cuasync.tensormap: dtype 16u4_align16b is a Blackwell type (compute capability 10.0+); %s is %d.%d"):format(
        dev.name, math.floor(dev.cc / 10), dev.cc % 10))
      buf:close()
    end
  end)
end)
