-- cuasync.swizzle: the Lua model of where TMA puts a box in shared memory. On the CPU its values
-- and refusals are pinned; on the GPU every swizzle mode x element size (1, 2, 4, 8 bytes) x inner
-- width is loaded from a matrix whose values encode their column and row, and the shared-memory
-- image is compared with the model byte for byte (and nothing is written past the box).
local ffi = require("ffi")
local cuasync = require("cuasync")
local H = require("helper")

local swizzle = cuasync.swizzle

describe("swizzle model", function()
  local gpu_it = H.gpu_it(it, pending)

  it("places 16-byte chunks as the XOR of chunk and 128-byte row", function()
    local L = swizzle.layout("128B", { 32, 8 }, 4)
    assert.equal(1024, L.bytes)
    assert.equal(0, L:offset(0, 0))
    assert.equal(128 + 16, L:offset(0, 1))            -- chunk 0 of row 1 lands in slot 1
    assert.equal(7 * 128 + 7 * 16 + 4, L:offset(1, 7))   -- row 7: chunk 0 -> slot 7
    assert.equal(3 * 128 + 0 * 16 + 8, L:offset(14, 3))  -- chunk 3 ^ 3 = 0
    local col, row = L:at(3 * 128 + 8)
    assert.same({ 14, 3 }, { col, row })
    -- 64B: two 64-byte rows per 128-byte line share one XOR value
    local L64 = swizzle.layout("64B", { 16, 8 }, 4)
    assert.equal(64, L64:offset(0, 1))
    assert.equal(128 + 16, L64:offset(0, 2))
    -- 32B: the chunk flips every fourth 32-byte row
    local L32 = swizzle.layout("32B", { 8, 8 }, 4)
    assert.equal(3 * 32, L32:offset(0, 3))
    assert.equal(4 * 32 + 16, L32:offset(0, 4))
    -- none: dense
    assert.equal(5 * 96 + 8 * 2, swizzle.layout("none", { 48, 6 }, 2):offset(8, 5))
  end)

  it("is a permutation of the box for every mode and element size", function()
    for _, mode in ipairs({ "none", "32B", "64B", "128B" }) do
      for _, eb in ipairs({ 1, 2, 4, 8 }) do
        local inner = mode == "none" and 256 or swizzle.SPAN[mode]
        local L = swizzle.layout(mode, { math.min(256, inner / eb), 24 }, eb)
        local seen = {}
        for r = 0, L.rows - 1 do
          for c = 0, L.cols - 1 do
            local o = L:offset(c, r)
            assert.is_true(o >= 0 and o < L.bytes and o % eb == 0)
            assert.is_nil(seen[o])
            seen[o] = true
            local c2, r2 = L:at(o)
            assert.same({ c, r }, { c2, r2 })
          end
        end
      end
    end
  end)

  it("counts the bank conflicts a 128B swizzle removes from a column read", function()
    local cells = {}
    for r = 0, 31 do cells[#cells + 1] = { 5, r } end
    assert.equal(32, swizzle.layout("none", { 32, 32 }, 4):bank_conflicts(cells))
    assert.equal(4, swizzle.layout("128B", { 32, 32 }, 4):bank_conflicts(cells))
    local row = {}
    for c = 0, 31 do row[#row + 1] = { c, 9 } end
    assert.equal(1, swizzle.layout("128B", { 32, 32 }, 4):bank_conflicts(row))
  end)

  it("shows the layout as a grid of columns", function()
    local s = swizzle.show("128B", { 32, 16 }, 4)
    local lines = {}
    for l in s:gmatch("[^\n]+") do lines[#lines + 1] = l end
    assert.equal(17, #lines)
    assert.equal("  1 |  4  5  6  7  0  1  2  3 12 13 14 15  8  9 10 11 20 21 22 23 16 17 18 19 28 29 30 31 24 25 26 27", lines[3])
    assert.equal(lines[2]:sub(6), lines[10]:sub(6))   -- the pattern repeats every 8 rows (1024 bytes)
  end)

  it("refuses bad arguments by name", function()
    local cases = {
      { { "48B", { 8, 8 }, 4 }, 'cuasync.swizzle.layout: mode = "48B" is not one of 128B, 32B, 64B, none' },
      { { "64B", 8, 4 }, "cuasync.swizzle.layout: box must be a table of 1..5 positive integers (innermost first)" },
      { { "64B", { 8, 0 }, 4 }, "cuasync.swizzle.layout: box[2] = 0 is outside 1..256" },
      { { "64B", { 8, 8 }, 3 }, "cuasync.swizzle.layout: elem_bytes = 3 is not 1, 2, 4 or 8" },
      { { "64B", { 6, 8 }, 2 }, "cuasync.swizzle.layout: box[1] * elem_bytes = 12 is not a multiple of 16" },
      { { "64B", { 32, 8 }, 4 }, "cuasync.swizzle.layout: box[1] * elem_bytes = 128 exceeds the 64B swizzle span" },
    }
    for _, c in ipairs(cases) do
      assert.has.error(function() swizzle.layout(c[1][1], c[1][2], c[1][3]) end, c[2])
    end
    assert.has.error(function() swizzle.show("1B", { 8 }, 4) end,
      'cuasync.swizzle.show: mode = "1B" is not one of 128B, 32B, 64B, none')
  end)

  -- The value of matrix element (col, row) for an element size: its column and row, so that a
  -- misplaced element says where it came from.
  local function value(col, row, eb)
    if eb == 1 then return (col + 53 * row) % 256 end
    return col + 256 * row
  end

  gpu_it("matches what TMA writes for every mode, element size and inner width #gpu", function()
    local k = cuasync.program{ file = "spec/support/kernels/tensor_probe.cu" }:compile():kernel("tensor_image_2d",
      "tensormap, ptr, u32, u32, i32, i32, ptr")
    local DT = { [1] = "u8", [2] = "u16", [4] = "u32", [8] = "u64" }
    local W, Hh = 512, 96
    local status = cuasync.alloc(8)
    local checked = 0
    for _, eb in ipairs({ 1, 2, 4, 8 }) do
      local host = ffi.new("uint8_t[?]", W * Hh * eb)
      for row = 0, Hh - 1 do
        for col = 0, W - 1 do
          local v = value(col, row, eb)
          for b = 0, eb - 1 do host[(row * W + col) * eb + b] = math.floor(v / 256 ^ b) % 256 end
        end
      end
      local mat = cuasync.alloc(W * Hh * eb)
      mat:upload(host, W * Hh * eb)
      for _, mode in ipairs({ "none", "32B", "64B", "128B" }) do
        for _, inner in ipairs({ 16, 32, 64, 128, 256 }) do
          local cols = inner / eb
          if (mode == "none" or inner <= swizzle.SPAN[mode]) and cols <= 256 then
            local rows = 24 + H.random_u32() % 17
            local tm = cuasync.tensormap{ buffer = mat, dtype = DT[eb], dims = { W, Hh }, box = { cols, rows }, swizzle = mode }
            local L = swizzle.layout(mode, { cols, rows }, eb)
            assert.equal(L.data_bytes, tm.box_bytes)
            assert.equal(L.bytes, tm.smem_bytes)
            local image_bytes = L.bytes + 1024
            local out = cuasync.alloc(image_bytes)
            out:fill(0)
            status:fill(0)
            local c0 = (H.random_u32() % ((W - cols) * eb / 16)) * 16 / eb
            local c1 = H.random_u32() % (Hh - rows)
            k:launch({ grid = 1, block = 256, smem = image_bytes }, tm, out, tm.box_bytes, image_bytes, c0, c1, status)
            cuasync.synchronize()
            local st = status:download("uint32_t", 2)
            assert.equal(1, st[0], "the load did not complete")
            assert.equal(0, st[1], "the shared-memory image is not 1024-byte aligned")
            local img = out:download("uint8_t", image_bytes)
            -- the model's image: every byte of the box where the model puts it, poison elsewhere
            local want = ffi.new("uint8_t[?]", image_bytes)
            ffi.fill(want, image_bytes, 0xA5)
            for row = 0, rows - 1 do
              for col = 0, cols - 1 do
                local o, src = L:offset(col, row), ((c1 + row) * W + c0 + col) * eb
                for b = 0, eb - 1 do want[o + b] = host[src + b] end
              end
            end
            for o = 0, image_bytes - 1 do
              if img[o] ~= want[o] then
                local col, row, b = L:at(o)
                error(("%s swizzle, %d-byte elements, box {%d, %d}: smem byte %d is 0x%02x, the model says 0x%02x (%s)"):format(
                  mode, eb, cols, rows, o, img[o], want[o],
                  col and ("byte %d of element (%d, %d)"):format(b, col, row) or "padding or past the box: untouched"))
              end
            end
            checked = checked + 1
            out:close()
          end
        end
      end
      mat:close()
    end
    assert.equal(20 + 8 + 12 + 16, checked)   -- none: 5 widths, 32B: 2, 64B: 3, 128B: 4; x 4 sizes
    status:close()
  end)
end)
