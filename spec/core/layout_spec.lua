-- cuasync.layout: several pipeline plans and regions in one block's dynamic shared memory: the
-- placement (each plan on its alignment, regions on 1024), the Configs' base, the check against
-- the device's limit, the refusals, the post-mortem naming the pipeline that owns a hung barrier;
-- on the GPU, kernels-src/layout_pair.cu adds two pipelines' chunks through a region, and a
-- planted hang in the second pipeline is named as that pipeline's.
local cuasync = require("cuasync")
local H = require("helper")
local hang = require("cuasync.hang")

local function plans(ys_extra)
  local X = cuasync.pipeline{ name = "xs", stages = 3, stage_bytes = 4096, producer = { warps = 1 }, consumer = { warps = 4 } }
  local s = { name = "ys", stages = 2, stage_bytes = 4096, producer = { warps = 1 }, consumer = { warps = 4 } }
  for k, v in pairs(ys_extra or {}) do s[k] = v end
  return X, cuasync.pipeline(s)
end

local function refusal(f, msg)
  local ok, err = pcall(f)
  assert.is_false(ok)
  assert.truthy(tostring(err):find(msg, 1, true), tostring(err))
end

describe("cuasync.layout", function()
  it("places each plan on its alignment and regions on 1024, with one slack for the origin", function()
    local X, Y = plans()
    local L = cuasync.layout{ name = "pair", pipelines = { X, Y }, regions = { sum = 4096 } }
    assert.same({ 0, X.smem_bytes - X.slack }, { L.parts[1].offset, L.parts[1].bytes })
    assert.same({ 12336, 8224 }, { L.parts[2].offset, L.parts[2].bytes })
    assert.same({ "sum", 21504, 4096 }, { L.regions[1].name, L.regions[1].offset, L.regions[1].bytes })
    assert.same({ 1024, 1008, 26608, 160 }, { L.align, L.slack, L.smem_bytes, L.block })
    assert.equal(12336, L.pipelines.ys.base_offset)
    assert.equal(L.pipelines[2], L.pipelines.ys)
    assert.truthy(L.pipelines.ys:header():find("base_offset = 12336u, base_align = 1024u", 1, true))
    assert.truthy(X:header():find("base_offset = 0u, base_align = 16u", 1, true))   -- the plan given is unchanged
    assert.is_nil(X.placed_in)
    local h = L:header()
    assert.truthy(h:find("static constexpr unsigned sum_offset = 21504u, sum_bytes = 4096u;", 1, true), h)
    assert.truthy(h:find("typedef cuasync::pipelines::ys ys_config;", 1, true), h)
    assert.truthy(L:explain():find("region 'sum' at 21504: 4096 B, aligned to 1024", 1, true), L:explain())
    -- a 1024-aligned plan after a 16-aligned one starts on 1024
    local T = cuasync.pipeline{ name = "t", stages = 2, scratch = 100, stage_bytes = 1024, producer = { warps = 1 }, consumer = { warps = 4 } }
    local L2 = cuasync.layout{ name = "two", pipelines = { X, T } }
    assert.same({ 12336 + (1024 - 12336 % 1024), 1024 }, { L2.parts[2].offset, L2.align })
    assert.same({ "a", "b" }, { cuasync.layout{ pipelines = { X }, regions = { b = 16, a = 16 } }.regions[1].name,
                                cuasync.layout{ pipelines = { X }, regions = { { "a", 16 }, { "b", 16 } } }.regions[2].name })
  end)

  it("refuses what one kernel cannot hold, naming the rule", function()
    local X, Y = plans()
    refusal(function() cuasync.layout{ pipelines = { X, (plans({ consumer = { warps = 8 } })) } } end,
      "cuasync.layout: pipelines[2] is named 'xs' like pipelines[1]: each plan's Config is a struct of that name")
    local _, Y8 = plans({ consumer = { warps = 8 } })
    refusal(function() cuasync.layout{ pipelines = { X, Y8 } } end,
      "cuasync.layout: pipelines[2] ('ys') has roles 1 producer warps + 256 consumer threads but pipelines[1] ('xs') 1 producer warps + 128 consumer threads: one kernel has one block")
    local _, Yc = plans({ cluster = { 2, 1, 1 } })
    refusal(function() cuasync.layout{ pipelines = { X, Yc } } end, "has cluster {2, 1, 1} but pipelines[1] ('xs') {1, 1, 1}")
    refusal(function() cuasync.layout{ pipelines = {} } end, "pipelines must name at least one cuasync.pipeline plan")
    refusal(function() cuasync.layout{ pipelines = { X, {} } } end, "pipelines[2] must be a cuasync.pipeline plan")
    refusal(function() cuasync.layout{ pipelines = { X, Y:mutate{ tx_delta = 4 } } } end, "pipelines[2] ('ys') is a mutated plan")
    refusal(function() cuasync.layout{ pipelines = { X }, regions = { xs = 16 } } end, "regions name 'xs' twice (or as a pipeline, pipelines[1])")
    refusal(function() cuasync.layout{ pipelines = { X }, regions = { ["for"] = 16 } } end, "a region's name must be a C identifier")
    refusal(function() cuasync.layout{ pipelines = { X }, regions = { r = 0 } } end, "regions.r (bytes)")
    refusal(function() cuasync.layout{ pipelines = { X }, stages = 2 } end, "stages")
    refusal(function() cuasync.layout{ name = "a b", pipelines = { X } } end, "name must be a C identifier")
    -- the same thread count is not enough: the same roles (a thread's role is one in each plan)
    local Y5 = cuasync.pipeline{ name = "y5", stages = 2, stage_bytes = 4096, producer = { warps = 2 }, consumer = { warps = 3 } }
    refusal(function() cuasync.layout{ pipelines = { X, Y5 } } end,
      "pipelines[2] ('y5') has roles 2 producer warps + 96 consumer threads but pipelines[1] ('xs') 1 producer warps + 128 consumer threads")
    refusal(function() cuasync.layout{ name = "class", pipelines = { X } } end, 'name "class" is a C++ keyword')
    local XS = cuasync.pipeline{ name = "XS", stages = 2, stage_bytes = 4096, producer = { warps = 1 }, consumer = { warps = 4 } }
    refusal(function() cuasync.layout{ pipelines = { X, XS } } end,
      "pipelines[2] ('XS') and pipelines[1] ('xs') differ only in case: their defines (XS_STAGES, ...) would be one")
    local OK = cuasync.pipeline{ name = "ok", stages = 2, stage_bytes = 4096, producer = { warps = 1 }, consumer = { warps = 4 } }
    refusal(function() cuasync.layout{ pipelines = { X, OK } } end, "pipelines[2] is named 'ok', a field of the layout's struct or of L:simulate's result")
    refusal(function() cuasync.layout{ pipelines = { X }, regions = { align = 16 } } end, "regions.align: the region name 'align' is a field")
    refusal(function() cuasync.layout{ pipelines = { X }, regions = { xs_config = 16 } } end,
      "regions.xs_config: the region name 'xs_config' is also the member pipeline 'xs' generates")
    refusal(function() cuasync.layout{ pipelines = { X }, regions = { { "r", 16 }, { "r_offset", 16 } } } end,
      "regions[2]: the region name 'r_offset' is also the member region 'r' generates")
    refusal(function() cuasync.layout{ pipelines = { X }, regions = { { "a", 16 }, b = 32 } } end,
      "regions is either a list { { name, bytes }, ... } or a table { name = bytes, ... }, not both in one table")
    local ok, e = pcall(function() cuasync.layout{ name = "big2", pipelines = { X }, regions = { r = 2 ^ 20 } }:check("sm_90") end)
    assert.is_false(ok)
    assert.equal("plan", cuasync.errors.kind(e))   -- a sweep prunes a layout the device cannot hold
    local L = cuasync.layout{ name = "pair", pipelines = { X, Y }, regions = { sum = 4096 } }
    refusal(function() cuasync.layout{ pipelines = { L.pipelines.xs } } end, "is already placed in layout 'pair'")
    refusal(function() L.pipelines.xs:program{ file = "layout_pair.cu" } end,
      "cuasync.pipeline.program: pipeline 'xs' is placed in layout 'pair': build the kernel with the layout's program")
    refusal(function() L.pipelines.ys:launch_config{ grid = 1 } end, "pipeline 'ys' is placed in layout 'pair'")
    refusal(function() L:program{ file = "layout_pair.cu", trace = true } end, "cuasync.layout.program: trace: a kernel of several pipelines is not traced yet")
    refusal(function() L:program{ file = "layout_pair.cu", headers = { ["cuasync/layouts/pair.cuh"] = "" } } end,
      "headers already has cuasync/layouts/pair.cuh: the layout writes it")
    refusal(function() L:launch_config{ grid = 1, smem = 5 } end, "smem is filled by the layout (26608)")
    -- together over the device's limit, though each plan fits alone
    local big = {}
    for i = 1, 2 do
      big[i] = cuasync.pipeline{ name = "b" .. i, stages = 4, stage_bytes = 32768, producer = { warps = 1 }, consumer = { warps = 4 } }
      big[i]:check("sm_90")
    end
    refusal(function() cuasync.layout{ name = "big", pipelines = big }:check("sm_90") end,
      "cuasync.layout: layout 'big' needs 262272 bytes of dynamic shared memory ('b1' 131136 + 'b2' 131136, + alignment and 0 slack) but sm_90 (H100/H200) allows 232448 per block (smem_optin): 29824 bytes over")
  end)

  it("binds every Config for NVRTC (watched, planted), and fills the launch from the layout", function()
    local X, Y = plans()
    local L = cuasync.layout{ name = "pair", pipelines = { X, Y }, regions = { sum = 4096 } }
    for _, d in ipairs({ {}, { HANG = 1 } }) do
      local ptx = L:program{ file = "layout_pair.cu", arch = "sm_90a", defines = d }:ptx()
      assert.truthy(ptx:find("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes", 1, true))
      assert.truthy(ptx:find("%globaltimer", 1, true))   -- the watchdog is on by default
    end
    assert.same({ grid = 3, block = 160, smem = 26608 }, L:launch_config{ grid = 3 })
    local r = L:simulate{ iterations = 7 }
    assert.is_true(r.ok)
    assert.is_true(r.xs.ok and r.ys.ok)
    assert.is_false(L.pipelines.ys:mutate{ tx_delta = 16 }:simulate{ iterations = 5 }.ok)
  end)

  it("names the pipeline that owns a hung wait's barrier from the watchdog's record", function()
    local X, Y = plans()
    local L = cuasync.layout{ name = "pair", pipelines = { X, Y }, regions = { sum = 4096 } }
    local prog = L:program{ file = "layout_pair.cu", arch = "sm_90a" }
    local mod = { name = "m", program = prog, watch = { last = "layout_pair" } }
    local ys = L.pipelines.ys
    -- a consumer waiting on ys's full[1]: the record's base is the layout's origin (0x400)
    local r = { block = { [0] = 2, 0, 0 }, cluster_rank = 0, warp = 1, lane = 0, role = 2, stage = 1, parity = 0, iteration = 3,
                bar = 0x400 + ys.base_offset + ys.full_offset + 8, base = 0x400, phase_parity = 2, received = 0xFFFFFFFF,
                armed = 0xFFFFFFFF, waited_ns = 2e9, timeout_ns = 2e9 }
    local e = hang.error_from(r, mod, true)
    assert.equal("ys", e.pipeline)
    assert.truthy(tostring(e):find("(consumer) waited 2000 ms on full[1] of pipeline 'ys' (stage 1, phase 1, parity 0, iteration 3)", 1, true), tostring(e))
    r.bar = 0x400 + X.empty_offset   -- xs's empty[0]
    e = hang.error_from(r, mod, true)
    assert.same({ "xs", "empty" }, { e.pipeline, e.which })
  end)
end)

describe("cuasync.layout kernels", function()
  local gpu_it = H.gpu_it(it, pending)

  local function build(defines, watchdog)
    local X, Y = plans()
    local L = cuasync.layout{ name = "pair", pipelines = { X, Y }, regions = { sum = 4096 } }
    L:check(cuasync.device(0))
    local k = L:program{ file = "layout_pair.cu", defines = defines, watchdog = watchdog }:compile()
      :kernel("layout_pair", "ptr, ptr, ptr, u32")
    return L, k
  end

  gpu_it("two pipelines in one kernel add their chunks through the layout's region", function()
    local L, k = build()
    local chunk = 1024
    for _, c in ipairs({ { 1, 1 }, { 37, 5 }, { 200, 132 } }) do
      local chunks, grid = c[1], c[2]
      local x, y, out = cuasync.alloc(4 * chunk * chunks), cuasync.alloc(4 * chunk * chunks), cuasync.alloc(4 * chunk * chunks)
      x:fill_random{ dtype = "f32" }
      y:fill_random{ dtype = "f32" }
      out:poison()
      k:launch(L:launch_config{ grid = grid }, x, y, out, chunks)
      cuasync.synchronize()
      local hx, hy, ho = x:download("float", chunk * chunks), y:download("float", chunk * chunks), out:download("float", chunk * chunks)
      for i = 0, chunk * chunks - 1 do
        local c0, e = math.floor(i / chunk), i % chunk
        local j = c0 * chunk + (e + 32) % chunk   -- the kernel reads the region back rotated by 32
        local want = hx[j] + hy[j]
        if ho[i] ~= want then
          error(("chunks %d grid %d: out[%d] = %s, want %s"):format(chunks, grid, i, tostring(ho[i]), tostring(want)))
        end
      end
    end
  end)

  gpu_it("a hang in the second pipeline is named as that pipeline's", function()
    local L, k = build({ HANG = 1 }, { timeout_ms = 300 })
    local x, y, out = cuasync.alloc(4 * 1024 * 4), cuasync.alloc(4 * 1024 * 4), cuasync.alloc(4 * 1024 * 4)
    k:launch(L:launch_config{ grid = 1 }, x, y, out, 4)
    local ok, err = pcall(cuasync.synchronize)
    assert.is_false(ok)
    assert.is_true(cuasync.is_hang(err), tostring(err))
    assert.equal("ys", err.pipeline, tostring(err))
    assert.equal("full", err.which, tostring(err))
    assert.truthy(tostring(err):find("(consumer) waited", 1, true) and tostring(err):find("of pipeline 'ys'", 1, true), tostring(err))
    assert.is_true(err.context_ok)
    local _, k2 = build()   -- the next kernel in the process runs
    k2:launch(L:launch_config{ grid = 1 }, x, y, out, 4)
    cuasync.synchronize()
  end)
end)
