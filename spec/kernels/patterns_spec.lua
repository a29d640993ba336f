-- The async-copy patterns (lua/cuasync/kernels/patterns.lua over kernels-src/): every rule refused before
-- launch with its message; on the GPU every pattern, at several depths and at sizes that end in
-- partial tiles, on fresh random data with the output poisoned, every element checked against
-- the CPU reference and nothing written past the end.
local ffi = require("ffi")
local cuasync = require("cuasync")
local H = require("helper")
local patterns = cuasync.patterns

local POISON = 0xA5A5A5A5

describe("patterns", function()
  local gpu_it = H.gpu_it(it, pending)

  describe("kernel", function()
    it("refuses unknown patterns and options", function()
      assert.has.error(function() patterns.kernel("nope") end,
        "cuasync.patterns: unknown pattern 'nope' (patterns: " .. table.concat(patterns.names(), ", ") .. ")")
      assert.has.error(function() patterns.kernel(7) end, "cuasync.patterns: name must be a string (got number)")
      assert.has.error(function() patterns.kernel("pipe_unified", { stage = 2 }) end,
        "cuasync.patterns: unknown field 'stage' (fields: stages, tile_bytes)")
      assert.has.error(function() patterns.kernel("stage_sync", { stages = 2 }) end,
        "cuasync.patterns: pattern 'stage_sync' has no stages to set")
      assert.has.error(function() patterns.kernel("pipe_unified", { stages = 0 }) end,
        "cuasync.patterns: stages must be a positive integer (got 0)")
      assert.has.error(function() patterns.kernel("block_groups", { stages = 17 }) end,
        "cuasync.patterns: stages = 17 exceeds 16 for pattern 'block_groups'")
      assert.has.error(function() patterns.kernel("pipe_unified", { tile_bytes = 4096 }) end,
        "cuasync.patterns: pattern 'pipe_unified' has no tile_bytes to set")
      assert.has.error(function() patterns.kernel("bulk_add_one", { tile_bytes = 1000 }) end,
        "cuasync.patterns: tile_bytes = 1000 is not a multiple of 64 (bulk copies move 16-byte units, in up to 4 parts)")
    end)

    it("refuses more stages than fit in shared memory", function()
      assert.has.error(function() patterns.kernel("pipe_partitioned", { stages = 32, tile_bytes = 8192 }) end,
        "cuasync.patterns: pattern 'pipe_partitioned' with stages = 32 needs 262144 bytes of shared memory per block, over the device's 232448 (smem_optin) by 29696: fewer stages or smaller tiles")
    end)

    it("refuses sizes and pointers that break a pattern's rules", function()
      local p = patterns.kernel("pipe_unified")
      assert.has.error(function() p:check(0, 0, 10) end,
        "cuasync.patterns: n = 10 is not a multiple of 4 elements (pattern 'pipe_unified' moves 16-byte vectors)")
      assert.has.error(function() p:check(0, 0, 0) end, "cuasync.patterns: n must be a positive integer (got 0)")
      assert.has.error(function() p:check(8, 256, 16) end,
        "cuasync.patterns: out address 0x8 is not 16-byte aligned (pattern 'pipe_unified' copies 16-byte units)")
      assert.has.error(function() p:check(256, 4, 16) end,
        "cuasync.patterns: inp address 0x4 is not 16-byte aligned (pattern 'pipe_unified' copies 16-byte units)")
      -- element-wise patterns take any n
      assert.has_no.errors(function() patterns.kernel("stage_sync"):check(256, 512, 10) end)
      assert.equal(12, patterns.kernel("stage_ca4"):out_elems(10))
      assert.equal(10, patterns.kernel("stage_sync"):out_elems(10))
    end)
  end)

  gpu_it("refuses buffers smaller than n needs #gpu", function()
    local p = patterns.kernel("stage_cg16")
    local a, b = cuasync.alloc(64), cuasync.alloc(48)
    assert.has.error(function() p:prepare(b, a, 13) end,   -- 13 elements write 16 (zero-filled tail)
      "cuasync.patterns: out holds 48 bytes but pattern 'stage_cg16' with n = 13 needs 64")
    assert.has_no.errors(function() p:prepare(b, a, 12) end)
    assert.has.error(function() p:prepare(a, b, 16) end,
      "cuasync.patterns: inp holds 48 bytes but pattern 'stage_cg16' with n = 16 needs 64")
    a:close(); b:close()
  end)

  -- one run: fresh data, poisoned output, every element and a guard checked
  local function check_run(p, n, grid)
    local floaty = p.elem == "float"
    local guard = 64
    local total = p:out_elems(n) + guard
    local inp_h = ffi.new(p.elem .. "[?]", n)
    for i = 0, n - 1 do
      if floaty then inp_h[i] = (H.random_u32() % 2000001 - 1000000) / 1024 else inp_h[i] = H.random_u32() end
    end
    local inp, out = cuasync.alloc(n * 4), cuasync.alloc(total * 4)
    inp:upload(inp_h, n * 4)
    local before
    if p.spec.op == "reduce" then    -- the output's prior contents take part: random, not poison
      before = ffi.new(p.elem .. "[?]", total)
      for i = 0, total - 1 do
        if floaty then before[i] = (H.random_u32() % 2000001 - 1000000) / 512 else before[i] = H.random_u32() end
      end
      out:upload(before, total * 4)
    else
      out:fill(0xA5)
    end
    p:prepare(out, inp, n, { grid = grid })()
    cuasync.synchronize()
    local got = out:download(p.elem, total)
    local ok, err = p:verify(inp_h, got, n, before)
    assert.is_true(ok, ("%s (n = %d, grid = %s)"):format(tostring(err), n, tostring(grid)))
    local raw = ffi.cast("uint32_t *", got)
    for i = p:out_elems(n), total - 1 do
      local want = before and ffi.cast("uint32_t *", before)[i] or POISON
      assert.equal(want, raw[i], ("%s wrote past the end at element %d (n = %d)"):format(p.name, i, n))
    end
    inp:close(); out:close()
  end

  local function sizes(vec)
    local r = function(m) return H.random_u32() % m end
    if vec then return { 4, 508, 4 * (1000 + r(5000)), 4 * (2 ^ 16 + r(2 ^ 14)) } end
    return { 1, 3, 255, 257, 1 + r(100000), 2 ^ 18 + r(4096) }
  end

  local DEPTHS = { block_groups = { 1, 2, 5 }, block_mbarrier = { 1, 3, 8 }, pipe_unified = { 2, 3, 8 },
                   pipe_partitioned = { 1, 2, 6 }, cxx_unified = { 2, 4 }, cxx_partitioned = { 1, 3 },
                   bulk_add_one = { 1, 2, 5 } }

  for _, name in ipairs(patterns.names()) do
    for _, stages in ipairs(DEPTHS[name] or { false }) do
      local label = stages and ("%s with %d stages"):format(name, stages) or name
      gpu_it(label .. " computes every element exactly #gpu", function()
        local p = patterns.kernel(name, stages and { stages = stages } or nil)
        for _, n in ipairs(sizes(p.spec.vec)) do
          check_run(p, n, 1 + H.random_u32() % 300)   -- a random grid: tiles per block vary
        end
        check_run(p, p.spec.vec and 4 * 50000 or 200001, nil)   -- the default grid
      end)
    end
  end
end)
