-- The one driver shape of lua/cuasync/kernels/*: M.program(opts) -> a checked program (no GPU),
-- M.build(opts, buffers) -> { run, verify, poison, bytes | flops }, as a sweep's build returns.
-- On the GPU: poisoned, run, verified; poisoned again without a run, verify must say so (the
-- poison is buf:poison's NaN pattern; a reduce, which reads its output, starts from fresh data).
local cuasync = require("cuasync")
local H = require("helper")
local copy = require("cuasync.kernels.copy")
local patterns = require("cuasync.kernels.patterns")
local gemm = require("cuasync.kernels.gemm")

describe("kernel drivers", function()
  local gpu_it = H.gpu_it(it, pending)

  it("program(opts) gives each driver's checked program without a GPU", function()
    local p = copy.program{ stages = 3, chunk = 2048 }
    assert.equal(3, p.defines.STAGES + 0)
    assert.equal(2048, p.defines.CHUNK + 0)
    p = patterns.program{ name = "pipe_unified", stages = 5 }
    assert.equal(5, p.defines.STAGES + 0)
    assert.equal("pipelines.cu", p.name)
    p = gemm.program{ stages = 3, tile = "128x256", m = 512, n = 512, k = 512, cluster = 2 }
    assert.same({ 128, 256, 2 }, { p.defines.BM + 0, p.defines.BN + 0, p.defines.CLUSTER + 0 })
    assert.equal(gemm.BK, p.defines.BK + 0)
    -- a plan is accepted as before; the program carries the plan for the launch-time checks
    local P = gemm.plan{ stages = 4, bm = 128, bn = 128, m = 256, n = 256, k = 256 }
    assert.equal(P, gemm.program(P).hooks.plan)
  end)

  it("poison their outputs with buf:poison, never with an old fill byte (0xA5's data or 0xFF's negative NaN)", function()
    for _, f in ipairs({ "copy", "cp_async", "patterns", "gemm" }) do
      local src = H.read("lua/cuasync/kernels/" .. f .. ".lua")
      assert.is_nil(src:find(":fill%(0x[%x]+%)"), f .. ".lua fills with a byte")
      assert.truthy(src:find(":poison(", 1, true), f .. ".lua: no buf:poison")
    end
  end)

  it("program(opts) refuses what its kernel refuses", function()
    assert.has.error(function() copy.program{ chunk = 100 } end,
      "cuasync.copy: chunk = 100 is not a multiple of 16 (cp.async.bulk moves 16-byte units)")
    assert.has.error(function() patterns.program{ name = "nope" } end)
    assert.has.error(function() patterns.program{ name = "stage_sync", stages = 2 } end,
      "cuasync.patterns: pattern 'stage_sync' has no stages to set")
    assert.has.error(function() gemm.program{ stages = 3, tile = "100x128", m = 64, n = 64, k = 64 } end,
      'cuasync.gemm: tile must be "BMxBN" with BM 64..256 in steps of 64 and BN 64, 128, 192 or 256 (got "100x128")')
    assert.has.error(function() copy.build({}, { dst = 1, src = 2, bytes = 16, stage = 1 }) end,
      "cuasync.copy: unknown field 'stage' in buffers (fields: bytes, dst, grid, src, stream)")
  end)

  -- poison, run, verify; poison again: verify must fail and say where
  local function check_shape(v, what)
    assert.is_function(v.run)
    assert.is_true((v.bytes or v.flops) > 0, what .. ": no bytes or flops")
    v.poison()
    v.run()
    cuasync.synchronize()
    local ok, why = v.verify()
    assert.is_true(ok, ("%s: %s"):format(what, tostring(why)))
    v.poison()
    cuasync.synchronize()
    ok, why = v.verify()
    assert.is_false(ok, what .. ": a poisoned output verified")
    assert.is_string(why)
    return why
  end

  gpu_it("copy.build copies and verifies #gpu", function()
    local bytes = 16 * (4096 + H.random_u32() % 4096)
    local src, dst = cuasync.alloc(bytes), cuasync.alloc(bytes)
    src:upload(H.random_bytes(bytes))
    local v = copy.build({ stages = 4, chunk = 4096 }, { dst = dst, src = src, bytes = bytes })
    assert.equal(2 * bytes, v.bytes)
    assert.truthy(check_shape(v, "copy"):find("^copy: bytes 0%.%.7 are 0x7ffa7ffa7ffa7ffa, expected 0x"))
    src:close(); dst:close()
  end)

  gpu_it("patterns.build runs and verifies every element #gpu", function()
    local n = 4 * (1000 + H.random_u32() % 1000)
    local inp, out = cuasync.alloc(4 * n), cuasync.alloc(4 * n)
    inp:upload(H.random_bytes(4 * n))
    for _, o in ipairs({ { name = "pipe_unified", stages = 3 }, { name = "reduce_add_u32" } }) do
      local v = patterns.build(o, { out = out, inp = inp, n = n })
      assert.equal(8 * n, v.bytes)
      local why = check_shape(v, o.name)
      assert.truthy(why:find("^pattern '" .. o.name .. "': element %d+ is"), why)
    end
    inp:close(); out:close()
  end)

  gpu_it("gemm.build runs, verifies against the reference it computes #gpu", function()
    local m, n, k = 256, 384, 320
    local A, B, C = cuasync.alloc(m * k * 2), cuasync.alloc(n * k * 2), cuasync.alloc(m * n * 4)
    gemm.random(A, m * k, H.random_u32())
    gemm.random(B, n * k, H.random_u32())
    for _, cl in ipairs({ 1, 2 }) do
      local v = gemm.build({ stages = 3, tile = "128x128", m = m, n = n, k = k, cluster = cl }, { a = A, b = B, c = C })
      assert.equal(2 * m * n * k, v.flops)
      assert.truthy(check_shape(v, "gemm cluster " .. cl):find("^%d+ of 98304 elements off the reference"))
    end
    A:close(); B:close(); C:close()
  end)
end)
