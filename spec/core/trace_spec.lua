-- The timeline (kernels-src/cuasync/trace.cuh, lua/cuasync/trace/init.lua): the trace option
-- checked before any compile; a program without trace compiles to the PTX of headers with every
-- trace line removed (zero cost, pinned); on the GPU, traced TMA, cp.async (both completions),
-- cluster multicast and plain kernels still produce verified output, and their records pair up,
-- run forward in time and name the plan's barriers; a ring too small counts what it lost;
-- reading before a synchronize and tracing a program built without it are refused by name.
local cuasync = require("cuasync")
local ffi = require("ffi")
local H = require("helper")
local fs = require("cuasync.fs")
local gpu_it = H.gpu_it(it, pending)

pcall(ffi.cdef, "int memcmp(const void *a, const void *b, size_t n);")

local function plan_map(box, real, dims)
  dims = dims or { 4096, 4096 }
  if real then return cuasync.tensormap{ buffer = real, dtype = "f32", dims = dims, box = box } end
  return cuasync.tensormap{ ptr = 2 ^ 20, bytes = dims[1] * dims[2] * 4, encode = false, dtype = "f32", dims = dims, box = box }
end

local function tma_plan(map, stages)
  return cuasync.pipeline{ name = "tma", stages = stages or 3, loads = { { map = map, name = "in" } },
                           producer = { warps = 1 }, consumer = { warps = 4 } }
end

describe("trace option", function()
  it("is refused by name before any compile: type, blocks, events, names, a NULL cdata", function()
    local cases = {
      { 3, "trace must be true, false or" },
      { "x", "trace must be true, false or" },
      { ffi.cast("void *", 0), "trace is a NULL pointer (a NULL cdata reads as nil" },
      { { blocks = 0 }, "trace.blocks (1 in n blocks) must be an integer in 1..2147483648 (got 0)" },
      { { blocks = "some" }, 'trace.blocks must be "all", n (1 block in n) or a list of block indices (got "some")' },
      { { blocks = {} }, "trace.blocks lists 1 to 64 blocks (got 0)" },
      { { blocks = { -1 } }, "trace.blocks[1] (a linear block index) must be an integer" },
      { { events = 8 }, "trace.events (the ring of each warp; smaller keeps too little of a pipeline) must be an integer in 16..1048576 (got 8)" },
      { { events = 1.5 }, "trace.events" },
      { { names = { [1] = 2 } }, "trace.names[1] must be a string (got number)" },
      { { frames = 1 }, "unknown field 'frames' in trace (fields: blocks, events, names)" },
    }
    for _, c in ipairs(cases) do
      local ok, err = pcall(cuasync.program, { source = "", trace = c[1] })
      assert.is_false(ok)
      assert.truthy(tostring(err):find("cuasync.program: " .. c[2], 1, true), tostring(err))
    end
    local ok, err = pcall(cuasync.program, { source = "", trace = true, defines = { CUASYNC_TRACE_EVENTS = 4 } })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("defines.CUASYNC_TRACE_EVENTS is set by the trace", 1, true), tostring(err))
  end)

  it("compiles its choices as defines: 1 block in 8 by default, all, 1 in n, a list", function()
    local function d(t) return cuasync.program{ source = "", trace = t }.defines end
    assert.same({ CUASYNC_TRACE = "1", CUASYNC_TRACE_EVENTS = "1024", CUASYNC_TRACE_STRIDE = "8" }, d(true))
    assert.equal("1", d{ blocks = "all" }.CUASYNC_TRACE_STRIDE)
    assert.equal("3", d{ blocks = 3, events = 64 }.CUASYNC_TRACE_STRIDE)
    assert.equal("64", d{ events = 64 }.CUASYNC_TRACE_EVENTS)
    local l = d{ blocks = { 0, 5 } }
    assert.equal("0u,5u", l.CUASYNC_TRACE_LIST)
    assert.is_nil(l.CUASYNC_TRACE_STRIDE)
    assert.same({}, cuasync.program{ source = "", trace = false }.defines)
  end)
end)

-- The device headers with every trace line taken out: #ifdef CUASYNC_TRACE blocks (their #else
-- kept), the include of trace.cuh, trace.cuh itself empty, and the kernels' trace:: lines.
local function untraced_copy(dir)
  local src = cuasync.kernels_dir()
  assert(fs.mkdirs(dir .. "/cuasync"))
  for _, n in ipairs(assert(fs.list(src, ".cu"))) do   -- a kernel's own trace lines (marks, ranges) go too
    local kept = {}
    for line in (assert(fs.read(src .. "/" .. n)) .. "\n"):gmatch("([^\n]*)\n") do
      if not line:find("cuasync::trace::", 1, true) then kept[#kept + 1] = line end
    end
    assert(fs.write(dir .. "/" .. n, table.concat(kept, "\n")))
  end
  for _, n in ipairs(assert(fs.list(src .. "/cuasync", ".cuh"))) do
    local out, skip, stack = {}, false, {}
    for line in (assert(fs.read(src .. "/cuasync/" .. n)) .. "\n"):gmatch("([^\n]*)\n") do
      if line:match("^#ifdef CUASYNC_TRACE%s*$") then stack[#stack + 1] = "trace"; skip = true
      elseif line:match("^#if") then stack[#stack + 1] = "other"; if not skip then out[#out + 1] = line end
      elseif line:match("^#else") and stack[#stack] == "trace" then skip = false
      elseif line:match("^#endif") then
        local top = table.remove(stack)
        if top == "trace" then skip = false elseif not skip then out[#out + 1] = line end
      elseif not skip and not line:find("#include <cuasync/trace.cuh>", 1, true) then out[#out + 1] = line end
    end
    assert.equal(0, #stack, n .. ": unbalanced #if")
    local text = n == "trace.cuh" and "#pragma once\n" or table.concat(out, "\n")
    assert(fs.write(dir .. "/cuasync/" .. n, text))
  end
end

describe("trace off", function()
  it("compiles to the PTX of the headers with every trace line removed (TMA, cp.async both forms, multicast, GEMM cooperative, ping-pong and direct bf16, plain, ordered consumers)", function()
    local dir = H.tmpdir()
    untraced_copy(dir .. "/k")
    local code = [[
      local cuasync = require("cuasync")
      local fs = require("cuasync.fs")
      local function m(box) return cuasync.tensormap{ ptr = 2 ^ 20, bytes = 2 ^ 26, encode = false, dtype = "f32", dims = { 4096, 4096 }, box = box } end
      local progs = {
        cuasync.pipeline{ name = "tma", stages = 3, loads = { { map = m{ 64, 32 }, name = "in" } }, producer = { warps = 1 },
          consumer = { warps = 4 } }:program{ file = "pipeline_tma.cu", arch = "sm_90a", defines = { BOX_X = 64, BOX_Y = 32 } },
        cuasync.pipeline{ name = "cp", stages = 3, loads = { { cp_async = 8192, vector = 16, name = "x" } }, producer = { warps = 2 },
          consumer = { warps = 4 } }:program{ file = "cp_async_copy.cu", arch = "sm_90a" },
        cuasync.pipeline{ name = "cp", stages = 3, loads = { { cp_async = 8192, vector = 16, name = "x" } }, completion = "group",
          producer = "all", consumer = { warps = 8 } }:program{ file = "cp_async_copy.cu", arch = "sm_90a", watchdog = false },
        cuasync.pipeline{ name = "mc", stages = 4, loads = { { map = m{ 64, 16 }, name = "a" } }, multicast = { a = "x" },
          cluster = { 2, 1, 1 }, producer = { warps = 1 }, consumer = { warps = 2 } }:program{ file = "pipeline_multicast.cu",
          arch = "sm_90a", defines = { BOX_X = 64, BOX_Y = 32 } },
        require("cuasync.kernels.gemm").program({ stages = 4, bm = 128, bn = 128, m = 1024, n = 1024, k = 1024 }, { arch = "sm_90a" }),
        -- the epilogue's scoped range, in the ping-pong kernel and on the direct bf16 path
        require("cuasync.kernels.gemm").program({ schedule = "pingpong", stages = 4, tile = "128x128", m = 1024, n = 1024, k = 1024 },
          { arch = "sm_90a" }),
        require("cuasync.kernels.gemm").program({ stages = 4, tile = "128x256", out = "bf16", epilogue = "direct", m = 1024, n = 1024,
          k = 1024 }, { arch = "sm_90a" }),
        cuasync.program{ file = "block_async.cu", arch = "sm_90a" },
        cuasync.pipeline{ name = "pingpong", stages = 2, stage_bytes = 1024, producer = { warps = 4 }, consumer = { warps = 8 },
          order = { name = "math", groups = 2, depth = 2 }, scratch = 4096 }:program{ file = "order_log.cu", arch = "sm_90a" },
      }
      for _, p in ipairs(progs) do print(fs.sha256(p:ptx())) end
    ]]
    local ok, plain = H.luajit(code, { CUASYNC_CACHE_DIR = dir .. "/c1" }, 300)
    assert.is_true(ok, plain)
    local ok2, stripped = H.luajit(code, { CUASYNC_CACHE_DIR = dir .. "/c2", CUASYNC_KERNELS = dir .. "/k" }, 300)
    assert.is_true(ok2, stripped)
    local _, n = plain:gsub("%x+\n", "")
    assert.equal(9, n, plain)
    assert.equal(stripped, plain)
  end)
end)

-- A TMA copy through pipeline_tma.cu: W x Hh floats, boxes of 64 x rows; returns the kernel,
-- its launch, and a verify.
local function tma_copy(trace, o)
  o = o or {}
  local W, Hh, rows = 1024, o.height or 512, 32
  local n = W * Hh
  local src, dst = cuasync.alloc(n * 4), cuasync.alloc(n * 4)
  src:fill_random{ dtype = "u32" }
  local P = tma_plan(plan_map({ 64, rows }, nil, { W, Hh }), o.stages)
  local k = P:program{ file = "pipeline_tma.cu", defines = { BOX_X = 64, BOX_Y = rows }, trace = trace }:compile()
    :kernel("pipeline_tma", "tensormap, ptr, u32, u32, u32")
  local cfg = P:launch_config{ grid = o.grid or 16 }
  local tiles = (W / 64) * (Hh / rows)
  local function run()
    dst:poison()
    k:launch(cfg, plan_map({ 64, rows }, src, { W, Hh }), dst, W, W / 64, tiles)
  end
  local function verify() return (cuasync.compare(dst, src, { dtype = "u32" })) end
  return k, run, verify, { P = P, tiles = tiles, grid = type(cfg.grid) == "table" and cfg.grid or { cfg.grid }, stages = P.stages }
end

-- Checks every trace must pass: times forward within a slot, every wait_end after its begin.
local function well_formed(raw)
  for _, s in ipairs(raw.slots) do
    local last, open = nil, {}
    for i, e in ipairs(s.events) do
      assert.is_true(last == nil or e.t >= last, ("slot block %d warp %d: event %d goes back in time"):format(s.linear, s.warp, i))
      last = e.t
      local key = tostring(e.barrier) .. ":" .. tostring(e.stage)
      if e.kind == "wait_begin" then open[key] = e.t
      elseif e.kind == "wait_end" and open[key] then
        assert.is_true(e.t >= open[key])
        open[key] = nil
      end
    end
  end
end

describe("trace on the GPU", function()
  gpu_it("records a TMA pipeline's waits, issues and releases by the plan's names; the copy stays right", function()
    local k, run, verify, info = tma_copy({ blocks = "all" })
    run()
    cuasync.synchronize()
    assert.is_true(verify(), "the traced copy is wrong")
    local raw = require("cuasync.trace").raw(k)
    assert.equal("pipeline_tma", raw.kernel)
    assert.equal(0, raw.lost)
    well_formed(raw)
    local per_block = math.ceil(info.tiles / info.grid[1])
    local full_waits, issues, releases, roles = 0, 0, 0, {}
    local blocks = {}
    for _, s in ipairs(raw.slots) do
      blocks[s.linear] = true
      for _, e in ipairs(s.events) do
        if e.role then roles[e.role] = true end
        if e.kind == "wait_end" and e.barrier == "full" then full_waits = full_waits + 1 end
        if e.kind == "issue" then issues = issues + 1; assert.equal(info.P.tx_bytes, e.bytes) end
        if e.kind == "release" then releases = releases + 1; assert.equal("empty", e.barrier) end
        if e.stage then assert.is_true(e.stage >= 0 and e.stage < info.stages) end
      end
    end
    -- the clocks mapped right: a role's iterations follow each other in time, and a producer
    -- issues a stage only after its wait on empty for that iteration ended
    for _, sl in ipairs(raw.slots) do
      local last_it, last_t, wait_end = {}, {}, {}
      for _, e in ipairs(sl.events) do
        if e.role and e.iteration and e.kind == "wait_begin" then
          if last_it[e.role] then
            assert.is_true(e.iteration > last_it[e.role] and e.t >= last_t[e.role],
              ("block %d warp %d: %s iteration %d begins before iteration %d"):format(sl.linear, sl.warp, e.role, e.iteration, last_it[e.role]))
          end
          last_it[e.role], last_t[e.role] = e.iteration, e.t
        end
        if e.kind == "wait_end" and e.role == "producer" then wait_end[e.iteration] = e.t end
        if e.kind == "issue" and wait_end[e.iteration] then assert.is_true(e.t >= wait_end[e.iteration]) end
      end
    end
    local nb = 0
    for _ in pairs(blocks) do nb = nb + 1 end
    assert.equal(info.grid[1], nb)
    assert.is_true(roles.producer and roles.consumer)
    assert.equal(info.tiles, issues)                  -- one issue per tile, every block traced
    assert.equal(info.tiles * 4, full_waits)          -- each of the 4 consumer warps waits on every tile
    assert.equal(info.tiles * 4, releases)
    assert.is_true(per_block > info.stages)
    local T = k:trace()
    assert.equal(0, #T.problems, table.concat(T.problems, "; "))
    local S = T:summary()
    assert.truthy(S.consumer_full and S.producer_empty and S.diagnosis)
    assert.truthy(T:text():find("full", 1, true))
    local dir = H.tmpdir()
    local doc = require("dkjson").decode(assert(fs.read(T:perfetto(dir .. "/t.json"))))
    assert.truthy(#doc.traceEvents > 0)
    assert.truthy(assert(fs.read(T:svg(dir .. "/t.svg"))):find("<svg", 1, true))
  end)

  gpu_it("traces 1 block in 8 by default; a ring too small keeps the newest events and counts the rest", function()
    local k, run, verify = tma_copy(true, { grid = 16 })
    run()
    cuasync.synchronize()
    assert.is_true(verify())
    local raw = require("cuasync.trace").raw(k)
    local blocks = {}
    for _, s in ipairs(raw.slots) do blocks[s.linear] = true end
    assert.same({ [0] = true, [8] = true }, blocks)
    local k2, run2, verify2 = tma_copy({ blocks = { 3 }, events = 16 }, { grid = 4, height = 1024 })
    run2()
    cuasync.synchronize()
    assert.is_true(verify2())
    local raw2 = require("cuasync.trace").raw(k2)
    assert.is_true(raw2.lost > 0, "nothing lost in a 16-event ring")
    for _, s in ipairs(raw2.slots) do
      assert.equal(3, s.linear)
      -- three rings of 16, a wait two events: the newest 8 iterations of a role, no more
      local its = {}
      for _, e in ipairs(s.events) do if e.iteration and e.role then its[e.iteration] = true end end
      local n = 0
      for _ in pairs(its) do n = n + 1 end
      assert.is_true(n <= 8, n)
    end
    well_formed(raw2)
  end)

  gpu_it("traces cp.async plans of both completions, their copies verified", function()
    local cp = require("cuasync.kernels.cp_async")
    local bytes = 4 * 16384 * 8
    for _, o in ipairs({ { completion = "mbarrier", producer = { warps = 2 } }, { completion = "group", producer = "all" } }) do
      local src, dst = cuasync.alloc(bytes), cuasync.alloc(bytes)
      local expect, back = cuasync.host_alloc(bytes), cuasync.host_alloc(bytes)
      ffi.copy(expect.ptr, H.random_bytes(bytes), bytes)
      src:upload(expect)
      local b = cp.build({ completion = o.completion, producer = o.producer, stages = 3, trace = { blocks = "all" } },
                        { dst = dst, src = src, bytes = bytes, expect = expect, back = back })
      b.poison()
      b.run()
      cuasync.synchronize()
      assert.is_true((b.verify()))
      local raw = require("cuasync.trace").raw(b.kernel)
      well_formed(raw)
      local issues, full = 0, 0
      for _, s in ipairs(raw.slots) do
        for _, e in ipairs(s.events) do
          if e.kind == "issue" then issues = issues + 1 end
          if e.kind == "wait_end" and e.barrier == "full" then full = full + 1 end
        end
      end
      assert.is_true(issues > 0 and full > 0, o.completion)
    end
  end)

  gpu_it("traces a cluster multicast pipeline: both blocks of a cluster, their ranks, the copy right", function()
    local BX, BY, TILES = 64, 32, 6
    local rows = BY * TILES
    local src = cuasync.alloc(BX * rows * 4)
    local host = cuasync.host_alloc(BX * rows * 4)
    local x = ffi.cast("uint32_t *", host.ptr)
    for i = 0, BX * rows - 1 do x[i] = H.random_u32() end
    src:upload(host)
    local tm = cuasync.tensormap{ buffer = src, dtype = "f32", dims = { BX, rows }, box = { BX, BY / 2 } }
    local P = cuasync.pipeline{ name = "mc", stages = 3, loads = { { map = tm, name = "a" } }, multicast = { a = "x" },
                                cluster = { 2, 1, 1 }, producer = { warps = 1 }, consumer = { warps = 2 } }
    local k = P:program{ file = "pipeline_multicast.cu", defines = { BOX_X = BX, BOX_Y = BY }, trace = { blocks = "all" } }
      :compile():kernel("pipeline_multicast", "tensormap, ptr, u32, u64")
    local plane = BX * BY
    local dst = cuasync.alloc(2 * plane * 4)
    dst:fill(0xA5)
    k:launch(P:launch_config{ grid = { 2, 1, 1 } }, tm, dst, 1, plane)
    cuasync.synchronize()
    local got = dst:download("uint32_t", 2 * plane)
    for r = 0, 1 do
      for i = 0, plane - 1 do assert(got[r * plane + i] == x[i], ("block %d, word %d"):format(r, i)) end
    end
    local raw = require("cuasync.trace").raw(k)
    well_formed(raw)
    local ranks = {}
    for _, s in ipairs(raw.slots) do ranks[s.cluster_rank] = true end
    assert.same({ [0] = true, [1] = true }, ranks)
  end)

  gpu_it("traces a plain program's barrier waits and the user's marks; refuses a read before a synchronize", function()
    local src = [[
      #include <cuasync/mbarrier.cuh>
      extern "C" __global__ void k(unsigned *out, unsigned long long spin_ns)
      {
        __shared__ cuasync::mbarrier_t bar;
        if (threadIdx.x == 0) cuasync::mbarrier::init(&bar, blockDim.x);
        __syncthreads();
        cuasync::trace::mark(7);
        { cuasync::trace::range r(2);
          const unsigned long long t0 = cuasync::trace::clock_ns();
          while (cuasync::trace::clock_ns() - t0 < spin_ns) {} }
        cuasync::mbarrier::arrive(&bar);
        cuasync::mbarrier::wait_parity(&bar, 0);
        out[blockIdx.x * blockDim.x + threadIdx.x] = threadIdx.x + 1;
      }]]
    local k = cuasync.program{ source = src, trace = { blocks = "all", names = { [7] = "start", [2] = "spin" } } }:compile()
      :kernel("k", "ptr, u64")
    local out = cuasync.alloc(2 * 64 * 4)
    out:fill(0)
    k:launch({ grid = 2, block = 64 }, out, 300 * 1000 * 1000)   -- 300 ms
    local ok, err = pcall(k.trace, k)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("cuasync.trace: kernel 'k' may still be running: read its trace after a synchronize", 1, true), tostring(err))
    cuasync.synchronize()
    local o = out:download("uint32_t", 128)
    for i = 0, 127 do assert.equal(i % 64 + 1, o[i]) end
    local raw = require("cuasync.trace").raw(k)
    well_formed(raw)
    local marks, ranges, waits = 0, 0, 0
    for _, s in ipairs(raw.slots) do
      local open
      for _, e in ipairs(s.events) do
        if e.kind == "mark" then marks = marks + 1; assert.equal(7, e.id) end
        if e.kind == "range_begin" then ranges = ranges + 1; assert.equal(2, e.id); open = e.t end
        if e.kind == "range_end" then   -- the scoped range's open is held until its close: one atomic, both stored then
          assert.equal(2, e.id)
          assert.truthy(open, "a range's end before its begin")
          local ms = tonumber(e.t - open) / 1e6
          assert.truthy(ms >= 300 and ms < 1000, ("the range lasted %.3f ms around a 300 ms spin"):format(ms))
          open = nil
        end
        if e.kind == "wait_begin" then waits = waits + 1; assert.is_nil(e.role); assert.truthy(e.barrier:find("^mbarrier@0x")) end
      end
    end
    assert.equal(2 * 2, marks)     -- 2 blocks x 2 warps
    assert.equal(2 * 2, ranges)
    assert.equal(2 * 2, waits)
  end)

  gpu_it("a scoped range as a warp's first events names its slot; past the ring's size the newest ranges stay whole, the rest counted", function()
    local src = [[
      #include <cuasync/arch.cuh>
      #include <cuasync/trace.cuh>
      extern "C" __global__ void k(unsigned *out, unsigned long long spin_ns)
      {
        for (unsigned r = 0; r < 10; ++r) {   // 20 events into a ring of 16
          cuasync::trace::range g(100 + r);
          const unsigned long long t0 = cuasync::trace::clock_ns();
          while (cuasync::trace::clock_ns() - t0 < spin_ns) {}
        }
        if (threadIdx.x % 32 == 0) out[blockIdx.x * 2 + threadIdx.x / 32] = cuasync::sm_id();
      }]]
    local k = cuasync.program{ source = src, trace = { blocks = "all", events = 16 } }:compile():kernel("k", "ptr, u64")
    local out = cuasync.alloc(2 * 2 * 4)
    out:fill(0xFF)
    k:launch({ grid = 2, block = 64 }, out, 2000)
    cuasync.synchronize()
    local sm = out:download("uint32_t", 4)
    local raw = require("cuasync.trace").raw(k)
    well_formed(raw)
    assert.equal(4, #raw.slots)
    assert.equal(4 * 4, raw.lost)   -- each warp: 20 written, 16 kept
    for _, sl in ipairs(raw.slots) do
      assert.equal(sm[sl.linear * 2 + sl.warp], sl.sm, "the slot is named by its first event, a range's (the SM)")
      assert.equal(16, #sl.events)
      for j, e in ipairs(sl.events) do   -- ranges 102..109, each begin then end, none torn by the ring
        assert.equal(j % 2 == 1 and "range_begin" or "range_end", e.kind)
        assert.equal(100 + 2 + math.floor((j - 1) / 2), e.id)
        if j % 2 == 0 then assert.truthy(e.t - sl.events[j - 1].t >= 2000, "a range shorter than its spin") end
      end
    end
  end)

  gpu_it("adds the hung block's last events to the watchdog's post-mortem", function()
    local W, Hh, BX, BY = 512, 256, 64, 32
    local src = H.random_words(W * Hh)
    local dst = cuasync.alloc(W * Hh * 4)
    local tm = cuasync.tensormap{ buffer = src, dtype = "f32", dims = { W, Hh }, box = { BX, BY } }
    local P = cuasync.pipeline{ name = "hang", stages = 3, loads = { { map = tm, name = "in" } }, producer = { warps = 1 },
                                consumer = { warps = 4 } }
    -- 2: consumer warp 3 never releases: the producer hangs on empty[0] at iteration 3
    local k = P:program{ file = "planted_hangs.cu", defines = { BOX_X = BX, BOX_Y = BY, HANG = 2 },
                         watchdog = { timeout_ms = 300 }, trace = { blocks = "all" } }:compile()
      :kernel("planted", "tensormap, ptr, u32, u32, u32")
    k:launch(P:launch_config{ grid = 1 }, tm, dst, W, W / BX, 8)
    local ok, err = pcall(cuasync.synchronize)
    assert.is_false(ok)
    assert.equal("hang", cuasync.errors.kind(err))
    assert.truthy(err.last_events, "no last events in a traced kernel's post-mortem")
    assert.equal(5, #err.last_events)   -- the producer warp and the 4 consumer warps of block 0
    local x = err:explain()
    assert.truthy(x:find("the timeline of the hung block, each warp's last events:", 1, true), x)
    assert.truthy(x:find("warp 0 (producer): ", 1, true), x)
    assert.truthy(x:find("wait begin empty[0] · it 3", 1, true), x)   -- the wait that never ended
  end)

  gpu_it("refuses a kernel built without trace, and a traced kernel inside a graph, by name", function()
    local k = cuasync.program{ source = 'extern "C" __global__ void k() {}' }:compile():kernel("k", "")
    local ok, err = pcall(k.trace, k)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("cuasync.trace: kernel 'k' was compiled without trace", 1, true), tostring(err))
    local kt = cuasync.program{ source = '#include <cuasync/mbarrier.cuh>\nextern "C" __global__ void t() {}', trace = true }:compile():kernel("t", "")
    ok, err = pcall(kt.trace, kt)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("has no traced launch to read: launch it first", 1, true), tostring(err))
    ok, err = pcall(cuasync.graph, function() kt:launch{ grid = 1, block = 32 } end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("kernel 't' is traced: a graph cannot hold it", 1, true), tostring(err))
    -- a traced program that includes no device header records nothing, and says so
    local kn = cuasync.program{ source = 'extern "C" __global__ void n() {}', trace = true }:compile():kernel("n", "")
    kn:launch{ grid = 1, block = 32 }
    cuasync.synchronize()
    ok, err = pcall(kn.trace, kn)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("cuasync.trace: kernel 'n' records nothing: its source includes no cuasync device header", 1, true), tostring(err))
  end)
end)
