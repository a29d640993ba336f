-- The byte-count rules of cuasync.pipeline (model/pipeline_plan.lua), checked on the CPU for
-- their numbers and words, and asked of the hardware on the GPU (spec/support/kernels/tx_rules.cu): a
-- barrier armed with the plan's tx_bytes completes once the stage's loads land; armed with 16
-- bytes more or less, it does not.
local ffi = require("ffi")
local cuasync = require("cuasync")
local H = require("helper")

-- A map over `buf` (GPU) or a plan-only map (CPU: encode = false, any aligned address).
local function map(buf, spec)
  local s = {}
  for k, v in pairs(spec) do s[k] = v end
  if buf then s.buffer = buf else s.ptr, s.bytes, s.encode = 2 ^ 20, 2 ^ 30, false end
  return cuasync.tensormap(s)
end

local CASES = {
  edge = function(buf)
    local tm = map(buf, { dtype = "f32", dims = { 100, 50 }, box = { 32, 16 }, load_only = true })
    return cuasync.pipeline{ stages = 1, loads = { tm }, producer = { warps = 1 }, consumer = { warps = 1 } }, tm
  end,
  padded = function(buf)
    local tm = map(buf, { dtype = "f32", dims = { 64, 64 }, box = { 8, 16 }, swizzle = "64B" })
    return cuasync.pipeline{ stages = 1, loads = { tm }, producer = { warps = 1 }, consumer = { warps = 1 } }, tm
  end,
  split = function(buf)
    local tm = map(buf, { dtype = "f32", dims = { 64, 64 }, box = { 32, 8 }, swizzle = "128B" })
    return cuasync.pipeline{ stages = 1, loads = { { map = tm, boxes = 2 } }, producer = { warps = 1 },
                             consumer = { warps = 1 } }, tm
  end,
  im2col = function(buf)
    local tm = map(buf, { dtype = "f16", dims = { 16, 64, 2 }, im2col = { lower = { 0 }, upper = { 0 }, channels = 16,
                                                                          pixels = 32 } })
    return cuasync.pipeline{ stages = 1, loads = { tm }, producer = { warps = 1 }, consumer = { warps = 1 } }, tm
  end,
  multicast = function(buf)
    local tm = map(buf, { dtype = "f32", dims = { 64, 64 }, box = { 32, 8 } })
    return cuasync.pipeline{ stages = 1, loads = { tm }, multicast = { [tm] = "x" }, cluster = { 2, 1, 1 },
                             producer = { warps = 1 }, consumer = { warps = 1 } }, tm
  end,
}

describe("pipeline derivation rules", function()
  local gpu_it = H.gpu_it(it, pending)

  it("derives each rule's byte count and says why", function()
    local P = CASES.edge()
    assert.equal(32 * 16 * 4, P.tx_bytes)
    assert.truthy(P:explain():find("hang over the tensor's edge in dimension 1 %(100 is not a multiple of 32%): the whole box still counts"))
    P = CASES.padded()
    assert.equal(8 * 16 * 4, P.tx_bytes)              -- the data bytes ...
    assert.equal(64 * 16, P.layout(P)[1].bytes)         -- ... while each row takes the 64-byte span
    assert.truthy(P:explain():find("rows of 32 B are padded to the 64B swizzle span in shared memory %(1024 B there%), but the transaction counts the 512 data bytes"))
    P = CASES.split()
    assert.equal(2 * 32 * 8 * 4, P.tx_bytes)
    assert.truthy(P:explain():find("2 boxes per stage", 1, true))
    P = CASES.im2col()
    assert.equal(16 * 32 * 2, P.tx_bytes)
    assert.truthy(P:explain():find("im2col f16: 32 pixels x 16 channels x 2 B = 1024 B per box", 1, true))
    P = CASES.multicast()
    assert.equal(2 * 32 * 8 * 4, P.tx_bytes)           -- the whole tile once, not x cluster
    assert.equal(2, P.empty_count)                     -- released by the consumers of both blocks
    assert.truthy(P:explain():find("not multiplied by the cluster", 1, true))
  end)

  gpu_it("holds on the hardware: the plan's count completes the phase, 16 bytes off does not", function()
    local src = cuasync.alloc(2 ^ 20)
    src:fill(0x3C)
    local mod = cuasync.program{ file = "spec/support/kernels/tx_rules.cu" }:compile()
    local tiled = mod:kernel("tx_tiled", "tensormap, i32, i32, u32, i32, u32, u32, u32, u32, ptr")
    local im2col = mod:kernel("tx_im2col", "tensormap, i32, i32, u32, u32, u32, ptr")
    local mcast = mod:kernel("tx_multicast", "tensormap, i32, i32, i32, u32, u32, u32, u32, ptr")
    local res = cuasync.alloc(64)
    local TRIES = 400
    local lines = {}
    for _, name in ipairs({ "edge", "padded", "split", "im2col", "multicast" }) do
      local P, tm = CASES[name](src)
      local derived = P.tx_bytes
      for _, delta in ipairs({ -16, 0, 16 }) do
        res:fill(0xEE)
        local armed = derived + delta
        if name == "im2col" then
          im2col:launch({ grid = 1, block = 32, smem = 4096 }, tm, 0, 0, armed, derived, TRIES, res)
        elseif name == "multicast" then
          mcast:launch({ grid = 2, block = 32, smem = 4096, cluster = { 2, 1, 1 } }, tm, 0, 8, 32, 1024, armed, derived,
                       TRIES, res)
        else
          local boxes = name == "split" and 2 or 1
          local x0, y0 = 0, 8
          if name == "edge" then x0, y0 = 96, 48 end
          tiled:launch({ grid = 1, block = 32, smem = 8192 }, tm, x0, y0, boxes, tm.box[1], tm.smem_bytes, armed, derived,
                       TRIES, res)
        end
        cuasync.synchronize()
        local r = res:download("uint32_t", 4)
        local blocks = name == "multicast" and 2 or 1
        for b = 0, blocks - 1 do
          local completed, settled = r[2 * b], r[2 * b + 1]
          lines[#lines + 1] = ("%-9s block %d armed %5d (plan %5d %+3d): completed %d, settled %d"):format(name, b, armed,
            derived, delta, completed, settled)
          assert.equal(delta == 0 and 1 or 0, completed, lines[#lines])
          assert.equal(1, settled, lines[#lines])
        end
      end
    end
    print("\n" .. table.concat(lines, "\n"))
    res:close(); src:close()
  end)
end)
