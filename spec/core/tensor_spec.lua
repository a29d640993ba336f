-- Tensor maps and tensor copies (pattern 8, spec/support/kernels/tensor_copy.cu): on the CPU the tensor
-- map's rules refuse bad maps before the driver; on the GPU boxes are loaded and stored in 1D,
-- 2D, 3D and 5D (+1 in shared memory), reduce-added into global memory, and multicast to every
-- block of clusters of 2 and 4. Fresh random data, poisoned outputs, every element checked.
local ffi = require("ffi")
local cuasync = require("cuasync")
local H = require("helper")

local POISON = 0xA5A5A5A5

describe("tensormap", function()
  local gpu_it = H.gpu_it(it, pending)

  local function prod(t) local p = 1 for _, x in ipairs(t) do p = p * x end return p end

  -- rank-N add-one or reduce round trip over every box of a random tensor
  local function round_trip(kind, dims, box)
    local rank, n = #dims, prod(dims)
    local inp_h = ffi.new("uint32_t[?]", n)
    for i = 0, n - 1 do inp_h[i] = H.random_u32() end
    local guard = 64
    local inp, out = cuasync.alloc(n * 4), cuasync.alloc((n + guard) * 4)
    inp:upload(inp_h, n * 4)
    local before = ffi.new("uint32_t[?]", n + guard)
    for i = 0, n + guard - 1 do before[i] = kind == "reduce" and H.random_u32() or POISON end
    out:upload(before, (n + guard) * 4)
    local tin = cuasync.tensormap{ buffer = inp, dtype = "u32", dims = dims, box = box }
    local tout = cuasync.tensormap{ ptr = out.ptr, bytes = n * 4, dtype = "u32", dims = dims, box = box }
    local nb, bx = {}, {}
    for d = 1, 5 do nb[d] = math.ceil((dims[d] or 1) / (box[d] or 1)); bx[d] = box[d] or 1 end
    local k = cuasync.program{ file = "spec/support/kernels/tensor_copy.cu" }:compile():kernel(
      ("tensor_%s_%dd"):format(kind, rank), "tensormap, tensormap, u32, u32, u32, u32, u32, u32, u32, u32, u32, u32, u32")
    k:launch({ grid = prod(nb), block = 128, smem = tin.box_bytes }, tin, tout, tin.box_bytes,
             nb[1], nb[2], nb[3], nb[4], nb[5], bx[1], bx[2], bx[3], bx[4], bx[5])
    cuasync.synchronize()
    local got = out:download("uint32_t", n + guard)
    for i = 0, n - 1 do
      local want = kind == "reduce" and (before[i] + inp_h[i]) % 2 ^ 32 or (inp_h[i] + 1) % 2 ^ 32
      if got[i] ~= want then
        error(("%s %dD: element %d is %d, expected %d (dims {%s}, box {%s})"):format(kind, rank, i, got[i], want,
              table.concat(dims, ","), table.concat(box, ",")))
      end
    end
    for i = n, n + guard - 1 do assert.equal(before[i], got[i], "a store wrote past the tensor") end
    inp:close(); out:close()
  end

  local r = function(m) return H.random_u32() % m end
  for _, kind in ipairs({ "add_one", "reduce" }) do
    gpu_it(("tensor %s in 1D, 2D, 3D and 5D, boxes over the edges #gpu"):format(kind), function()
      round_trip(kind, { 4 * (1250 + r(750)) }, { 64 })
      round_trip(kind, { 4 * (50 + r(40)), 37 + r(30) }, { 32, 8 })
      round_trip(kind, { 4 * (10 + r(10)), 9 + r(9), 3 + r(5) }, { 16, 4, 3 })
      round_trip(kind, { 12, 3 + r(3), 4, 2 + r(2), 3 }, { 8, 2, 3, 2, 2 })
    end)
  end

  -- Why tensormap refuses an inner extent that is not whole 16-byte units unless load_only: on
  -- the H200 the store writes the last unit in full. If this stops holding, the rule can relax.
  gpu_it("a tensor store writes the whole last 16-byte unit of the inner dimension #gpu", function()
    local n = 4 * (100 + r(100)) + 1 + r(3)
    local inp, out = cuasync.alloc(n * 4 + 64), cuasync.alloc(n * 4 + 64)
    inp:fill(0x11); out:fill(0xA5)
    local tin = cuasync.tensormap{ buffer = inp, dtype = "u32", dims = { n }, box = { 64 }, load_only = true }
    local tout = cuasync.tensormap{ ptr = out.ptr, dtype = "u32", dims = { n }, box = { 64 }, load_only = true }
    local nb = math.ceil(n / 64)
    local k = cuasync.program{ file = "spec/support/kernels/tensor_copy.cu" }:compile():kernel("tensor_add_one_1d",
      "tensormap, tensormap, u32, u32, u32, u32, u32, u32, u32, u32, u32, u32, u32")
    k:launch({ grid = nb, block = 128, smem = tin.box_bytes }, tin, tout, tin.box_bytes, nb, 1, 1, 1, 1, 64, 1, 1, 1, 1)
    cuasync.synchronize()
    local got = out:download("uint32_t", n + 16)
    for i = 0, n - 1 do assert.equal(0x11111112, got[i]) end
    local unit_end = math.ceil(n / 4) * 4
    for i = n, unit_end - 1 do assert.equal(1, got[i], "the zero-filled rest of the last unit, + 1") end
    for i = unit_end, n + 15 do assert.equal(POISON, got[i], "nothing past the last 16-byte unit") end
    inp:close(); out:close()
  end)

  for _, csize in ipairs({ 2, 4 }) do
    gpu_it(("multicast lands one load in every block of a cluster of %d #gpu"):format(csize), function()
      local W, Hh = 4 * (40 + r(30)), 20 + r(20)
      local b0, b1 = 32, 8
      local n = W * Hh
      local inp_h = ffi.new("uint32_t[?]", n)
      for i = 0, n - 1 do inp_h[i] = H.random_u32() end
      local inp = cuasync.alloc(n * 4)
      inp:upload(inp_h, n * 4)
      local tin = cuasync.tensormap{ buffer = inp, dtype = "u32", dims = { W, Hh }, box = { b0, b1 } }
      local n0, n1 = math.ceil(W / b0), math.ceil(Hh / b1)
      local clusters, words = n0 * n1, b0 * b1
      local out = cuasync.alloc(clusters * csize * words * 4)
      out:fill(0xA5)
      local k = cuasync.program{ file = "spec/support/kernels/tensor_copy.cu" }:compile():kernel("tensor_multicast", "tensormap, ptr, u32, u32, u32, u32")
      k:launch({ grid = clusters * csize, block = 128, cluster = { csize, 1, 1 }, smem = tin.box_bytes },
               tin, out, tin.box_bytes, n0, b0, b1)
      cuasync.synchronize()
      local got = out:download("uint32_t", clusters * csize * words)
      for ci = 0, clusters - 1 do
        local x0, y0 = (ci % n0) * b0, math.floor(ci / n0) * b1
        for rank = 0, csize - 1 do
          for y = 0, b1 - 1 do
            for x = 0, b0 - 1 do
              local gx, gy = x0 + x, y0 + y
              local want = (gx < W and gy < Hh) and inp_h[gy * W + gx] or 0   -- zeros past the edge
              local at = (ci * csize + rank) * words + y * b0 + x
              if got[at] ~= want then
                error(("cluster %d rank %d: box element (%d, %d) is %d, expected %d"):format(ci, rank, x, y, got[at], want))
              end
            end
          end
        end
      end
      inp:close(); out:close()
    end)
  end
end)
