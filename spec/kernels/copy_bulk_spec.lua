-- copy_bulk.cu on the GPU: every stage count 1..8, sizes that are not multiples of the chunk,
-- fresh random data, output poisoned first, every byte compared.
local ffi = require("ffi")
local cuasync = require("cuasync")
local H = require("helper")
local copy = require("cuasync.kernels.copy")

describe("copy_bulk", function()
  local gpu_it = H.gpu_it(it, pending)

  it("refuses sizes and pointers that break the bulk-copy rules", function()
    assert.has.error(function() copy.check_bulk(1000, 0, 0) end,
      "cuasync.copy: bytes = 1000 is not a multiple of 16 (cp.async.bulk moves 16-byte units)")
    assert.has.error(function() copy.check_bulk(0, 0, 0) end, "cuasync.copy: bytes must be a positive integer (got 0)")
    assert.has.error(function() copy.check_bulk(64, 8, 256) end,
      "cuasync.copy: dst address 0x8 is not 16-byte aligned (cp.async.bulk needs 16-byte aligned global addresses)")
    assert.has.error(function() copy.check_bulk(64, 256, 4) end,
      "cuasync.copy: src address 0x4 is not 16-byte aligned (cp.async.bulk needs 16-byte aligned global addresses)")
    assert.has.error(function() copy.bulk_kernel{ stages = 8, chunk = 32768 } end,
      "cuasync.copy: stages * chunk = 262144 bytes of shared memory (plus 64 for barriers) exceeds the device's 232448 bytes per block (smem_optin) by 29760: fewer stages or smaller stages")
    assert.has.error(function() copy.bulk_kernel{ stages = 0 } end, "cuasync.copy: stages must be a positive integer (got 0)")
    assert.has.error(function() copy.bulk_kernel{ chunk = 100 } end, "cuasync.copy: chunk = 100 is not a multiple of 16 (cp.async.bulk moves 16-byte units)")
    assert.has.error(function() copy.bulk_kernel{ inflight = 0 } end, "cuasync.copy: inflight must be a positive integer (got 0)")
    assert.has.error(function() copy.bulk_kernel{ stage = 4 } end,
      "cuasync.copy: unknown field 'stage' (fields: chunk, inflight, stages, store_lag, watchdog)")
  end)

  gpu_it("sizes the grid to the ring bytes per SM it aims for, within residency and chunks #gpu", function()
    local sms = cuasync.device(0).sms
    local deep = copy.bulk_kernel{ stages = 10, chunk = 4096 }          -- 40 KiB: one ring per SM
    assert.same({ sms, 1 }, { deep:grid(2 ^ 30) })
    local shallow = copy.bulk_kernel{ stages = 1, chunk = 4096 }        -- 4 KiB rings: ten per SM
    assert.same({ 10 * sms, 10 }, { shallow:grid(2 ^ 30) })
    assert.same({ 5, 10 }, { shallow:grid(5 * 4096 - 16) })            -- never more blocks than chunks
    local greedy = copy.bulk_kernel{ stages = 4, chunk = 32768, inflight = 2 ^ 30 }
    local per_sm = greedy:kernel():occupancy(32, 4 * 32768)            -- capped by residency
    assert.is_true(per_sm >= 1)
    assert.same({ per_sm * sms, per_sm }, { greedy:grid(2 ^ 30) })
  end)

  for stages = 1, 8 do
    gpu_it(("copies exactly with %d stage%s #gpu"):format(stages, stages == 1 and "" or "s"), function()
      local chunk = 4096
      local k = copy.bulk_kernel{ stages = stages, chunk = chunk }
      for _, bytes in ipairs({ 16, chunk - 16, chunk + 48, 37 * chunk + 16 * (1 + H.random_u32() % 255),
                               2 ^ 22 + 16 * (H.random_u32() % 4096) }) do
        local src_host = H.random_bytes(bytes)
        local src, dst = cuasync.alloc(bytes + 64), cuasync.alloc(bytes + 64)
        src:upload(src_host)
        dst:fill(0xA5)   -- poison, and a guard past the end
        k:copy(dst, src, bytes, { grid = 1 + H.random_u32() % 200 })
        cuasync.synchronize()
        local out = dst:download("uint8_t", bytes + 64)
        assert.equal(0, ffi.C.memcmp(out, src_host, bytes), ("stages %d, %d bytes"):format(stages, bytes))
        for i = bytes, bytes + 63 do assert.equal(0xA5, out[i], "wrote past the end") end
        src:close(); dst:close()
      end
    end)
  end
end)
