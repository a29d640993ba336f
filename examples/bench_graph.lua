-- bench_graph.lua: what CUDA graphs and programmatic dependent launch give a Lua script that
-- orchestrates small kernels, every way verified, all measured side by side in interleaved rounds.
--  1. Launch rate of a 3-kernel step repeated 1000 times (3000 launches), enqueue (the host loop
--     alone) and end to end (through the final synchronize), for a raw FFI cuLaunchKernel,
--     k:launch, a prepared launch, a graph of the 3 launches replayed 1000 times, and one graph
--     of all 3000 launches; on a tiny kernel (one thread adds 1 to a counter: the count is
--     verified) and on a small one (y += a * x over 16K floats: y is verified against the CPU).
--  2. Capture + instantiate of the 3000-launch graph, ms, beside the same 3000 launches captured
--     and instantiated through raw FFI.
--  3. A producer -> consumer pair of small kernels, µs per pair, without and with PDL
--     (programmatic = true on the consumer, which calls cuasync::pdl::wait()), plain and replayed
--     from a graph; the consumer's output verified.
--   luajit examples/bench_graph.lua [--steps 1000] [--rounds 7] [--n 16384]
package.path = (debug.getinfo(1, "S").source:match("^@(.*)/") or ".") .. "/lib/?.lua;" .. package.path
require("example.checkout")   -- examples/lib/: this checkout's lua/ and build/ first on the paths
local ffi = require("ffi")
local bit = require("bit")
local cuasync = require("cuasync")
local o = require("cuasync.tools.cli").script{ options = {
  { "--steps N", "3-kernel steps per way", default = 1000 },
  { "--rounds N", "interleaved rounds", default = 7 },
  { "--n N", "floats of the small kernel's y += a * x", default = 16384 },
} }

local prog = cuasync.program{ file = "graph_steps.cu" }
local ok, why = cuasync.available()
if not ok then
  print(("compiled graph_steps.cu for %s (%d bytes); launches skipped: %s"):format(prog:arch(), #prog:cubin(), why))
  return
end

local STEPS, N = o.steps, o.n
local mod = prog:compile()
local tick, axpy = mod:kernel("tick", "ptr"), mod:kernel("axpy", "ptr, ptr, f32, u32")
local prod, cons = mod:kernel("pdl_producer", "ptr, u32, u32"), mod:kernel("pdl_consumer", "ptr, ptr, u32")
local raw = cuasync.driver_symbol("cuLaunchKernel", ffi.typeof([[
  int (*)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *, void **, void **)]]))

-- the data: a counter for the tiny kernel, x and y for the small one (fresh random floats)
local counter = cuasync.alloc(4)
local hx, hy = cuasync.host_alloc(N * 4), cuasync.host_alloc(N * 4)
local fx, fy = hx:as("float"), hy:as("float")
local seed = (os.time() % 2147483646) + 1
local function rnd() seed = seed * 16807 % 2147483647; return seed / 2147483647 - 0.5 end
for i = 0, N - 1 do fx[i], fy[i] = rnd(), rnd() end
local x, y = cuasync.alloc(N * 4), cuasync.alloc(N * 4)
x:upload(hx)
local A = 1 / 1024   -- exact in binary: the 3000 additions are checked with a tolerance
local SMALL = { grid = 16, block = 256 }
local TINY = { grid = 1, block = 32 }

-- each kernel's launch, prepare and raw-FFI parameters, written out for its own arguments (a
-- vararg passed through would cost every way a call)
local kinds = {
  tiny = { cfg = TINY, k = tick,
           launch = function(cfg) tick:launch(cfg, counter) end,
           prepare = function(cfg) return tick:prepare(cfg, counter) end,
           slots = function() return { ffi.new("uint64_t[1]", counter.ptr) } end,
           reset = function() counter:fill(0) end,
           verify = function(launches)
             local got = counter:download("uint32_t", 1)[0]
             if got ~= launches then error(("tiny: the counter is %d after %d launches"):format(got, launches)) end
           end },
  small = { cfg = SMALL, k = axpy,
            launch = function(cfg) axpy:launch(cfg, y, x, A, N) end,
            prepare = function(cfg) return axpy:prepare(cfg, y, x, A, N) end,
            slots = function() return { ffi.new("uint64_t[1]", y.ptr), ffi.new("uint64_t[1]", x.ptr), ffi.new("float[1]", A),
                                        ffi.new("uint32_t[1]", N) } end,
            reset = function() y:upload(hy) end,
            verify = function(launches)
              local got = y:download("float", N)
              for i = 0, N - 1 do
                local want = fy[i] + launches * A * fx[i]
                if math.abs(got[i] - want) > 1e-3 then
                  error(("small: y[%d] = %.6f after %d launches, want %.6f"):format(i, got[i], launches, want))
                end
              end
            end },
}

local function ways_of(kind)
  local cfg = kind.cfg
  local run = kind.prepare(cfg)
  local launch = kind.launch
  local G3 = cuasync.graph(function(s)
    local c = { grid = cfg.grid, block = cfg.block, stream = s }
    for _ = 1, 3 do launch(c) end
  end, { name = "step" })
  local t0 = cuasync.now_ns()
  local Gall = cuasync.graph(function(s)
    local r = kind.prepare({ grid = cfg.grid, block = cfg.block, stream = s })
    for _ = 1, 3 * STEPS do r() end
  end, { name = "all" })
  local capture_ms = tonumber(cuasync.now_ns() - t0) / 1e6
  G3:upload(); Gall:upload()
  local slots = kind.slots()
  local params = ffi.new("void *[?]", #slots)
  for i, sl in ipairs(slots) do params[i - 1] = sl end
  local fn, gx, bx = kind.k.fn, cfg.grid, cfg.block
  return {
    { "raw FFI cuLaunchKernel", function(steps)
        for _ = 1, 3 * steps do
          if raw(fn, gx, 1, 1, bx, 1, 1, 0, nil, params, nil) ~= 0 then error("cuLaunchKernel failed") end
        end
      end },
    { "k:launch", function(steps) for _ = 1, steps do launch(cfg); launch(cfg); launch(cfg) end end },
    { "prepared run()", function(steps) for _ = 1, steps do run(); run(); run() end end },
    { "graph of 3, replayed", function(steps) for _ = 1, steps do G3:launch() end end },
    { ("graph of %d, once"):format(3 * STEPS), function() Gall:launch() end },
  }, capture_ms, Gall, { slots, params }
end

local function median(t) return cuasync.median(t) end

-- the yardstick of capture + instantiate: the same 3000 launches captured through raw FFI
-- (cuStreamBeginCapture, cuLaunchKernel, cuStreamEndCapture, cuGraphInstantiateWithFlags)
local function raw_capture_ms(kind)
  local sym = function(name, t) return cuasync.driver_symbol(name, ffi.typeof(t)) end
  local begin = sym("cuStreamBeginCapture", "int (*)(void *, int)")
  local finish = sym("cuStreamEndCapture", "int (*)(void *, void **)")
  local inst = sym("cuGraphInstantiateWithFlags", "int (*)(void **, void *, unsigned long long)")
  local gdestroy, xdestroy = sym("cuGraphDestroy", "int (*)(void *)"), sym("cuGraphExecDestroy", "int (*)(void *)")
  local s = cuasync.stream()
  local slots = kind.slots()
  local params = ffi.new("void *[?]", #slots)
  for i, sl in ipairs(slots) do params[i - 1] = sl end
  local g, x = ffi.new("void *[1]"), ffi.new("void *[1]")
  local cfg = kind.cfg
  local t0 = cuasync.now_ns()
  assert(begin(s.handle, 1) == 0)
  for _ = 1, 3 * STEPS do
    if raw(kind.k.fn, cfg.grid, 1, 1, cfg.block, 1, 1, 0, s.handle, params, nil) ~= 0 then error("cuLaunchKernel failed") end
  end
  assert(finish(s.handle, g) == 0)
  local t1 = cuasync.now_ns()
  assert(inst(x, g[0], 0) == 0)
  local t2 = cuasync.now_ns()
  xdestroy(x[0]); gdestroy(g[0])
  s:close()
  return tonumber(t2 - t0) / 1e6, tonumber(t1 - t0) / 1e6, tonumber(t2 - t1) / 1e6
end

print(("bench_graph: %d steps of 3 launches (%d launches), %d rounds, medians; every way verified after each round"):format(
  STEPS, 3 * STEPS, o.rounds))
for _, name in ipairs({ "tiny", "small" }) do
  local kind = kinds[name]
  local ways, capture_ms, Gall, keep = ways_of(kind)
  local enq, e2e = {}, {}
  for _, w in ipairs(ways) do enq[w[1]], e2e[w[1]] = {}, {} end
  for round = 0, o.rounds do
    for _, w in ipairs(ways) do
      kind.reset()
      cuasync.synchronize()
      local t0 = cuasync.now_ns()
      w[2](STEPS)
      local t1 = cuasync.now_ns()
      cuasync.synchronize()
      local t2 = cuasync.now_ns()
      kind.verify(3 * STEPS)
      if round > 0 then   -- round 0 warms up (and lets the JIT compile)
        table.insert(enq[w[1]], tonumber(t1 - t0) / 1e9)
        table.insert(e2e[w[1]], tonumber(t2 - t0) / 1e9)
      end
    end
  end
  print(("\n%s kernel (%s): launches per second, and ratio to the prepared launch"):format(name,
    name == "tiny" and "1 block, one atomic" or ("16 blocks, y += a*x over %d floats"):format(N)))
  print(("  %-24s %12s %12s   %8s %8s"):format("way", "enqueue/s", "end to end/s", "enq x", "e2e x"))
  local pe, pt = median(enq["prepared run()"]), median(e2e["prepared run()"])
  for _, w in ipairs(ways) do
    local me, mt = median(enq[w[1]]), median(e2e[w[1]])
    print(("  %-24s %12.0f %12.0f   %8.2f %8.2f"):format(w[1], 3 * STEPS / me, 3 * STEPS / mt, pe / me, pt / mt))
  end
  print(("  capture + instantiate of the %d-launch graph: %.2f ms (the function's capture %.2f, instantiation %.2f; %d nodes)"):format(
    3 * STEPS, capture_ms, Gall.timing.capture_ms, Gall.timing.instantiate_ms, Gall.nodes.count))
  local rt, rc, ri = raw_capture_ms(kind)
  print(("  the same through raw FFI (cuLaunchKernel):   %.2f ms (capture %.2f, instantiation %.2f)"):format(rt, rc, ri))
end

-- 3. producer -> consumer pairs, without and with PDL: the consumer's prologue and launch
-- overlap the producer's tail when it may start early (the producer calls launch_dependents first)
local PN, PAIRS = 8192, STEPS
local buf, out = cuasync.alloc(PN * 4), cuasync.alloc(PN * 4)
local PCFG = { grid = 8, block = 256 }
local v = 0
local function verify_pairs(what)
  local got = out:download("uint32_t", PN)
  for i = 0, PN - 1 do
    local want = bit.tobit(bit.bxor(v, i * 2654435761) * 3 + 1)
    if bit.tobit(got[i]) ~= want then error(("%s: out[%d] = %d, want %d"):format(what, i, bit.tobit(got[i]), want)) end
  end
end
local function pair_graph(programmatic)
  return cuasync.graph(function(s)
    local p = prod:prepare({ grid = PCFG.grid, block = PCFG.block, stream = s })
    local c = cons:prepare({ grid = PCFG.grid, block = PCFG.block, stream = s, programmatic = programmatic }, out, buf, PN)
    for _ = 1, PAIRS do p(buf, PN, v); c() end
  end, { name = programmatic and "pairs_pdl" or "pairs" })
end
local pp = prod:prepare(PCFG)
local cp, cpp = cons:prepare(PCFG, out, buf, PN), cons:prepare({ grid = PCFG.grid, block = PCFG.block, programmatic = true }, out, buf, PN)
local pairs_ways = {
  { "prepared, stream order", function() for _ = 1, PAIRS do pp(buf, PN, v); cp() end end },
  { "prepared, PDL", function() for _ = 1, PAIRS do pp(buf, PN, v); cpp() end end },
  { "graph, stream order", nil, false },
  { "graph, PDL", nil, true },
}
local tpair = {}
for _, w in ipairs(pairs_ways) do tpair[w[1]] = {} end
for round = 0, o.rounds do
  v = math.floor((rnd() + 0.5) * 2 ^ 32) % 2 ^ 32
  for _, w in ipairs(pairs_ways) do
    local G
    if w[2] == nil then G = pair_graph(w[3]); G:upload() end   -- captured with this round's v
    out:fill(0xEE)
    cuasync.synchronize()
    local t0 = cuasync.now_ns()
    if G then G:launch() else w[2]() end
    cuasync.synchronize()
    local t1 = cuasync.now_ns()
    verify_pairs(w[1])
    if G then G:close() end
    if round > 0 then table.insert(tpair[w[1]], tonumber(t1 - t0) / 1e3 / PAIRS) end
  end
end
print(("\nproducer -> consumer pairs (%d blocks x %d threads, %d words), %d pairs: µs per pair, end to end"):format(
  PCFG.grid, PCFG.block, PN, PAIRS))
local base_prep, base_graph = median(tpair["prepared, stream order"]), median(tpair["graph, stream order"])
for _, w in ipairs(pairs_ways) do
  local m = median(tpair[w[1]])
  local base = w[2] and base_prep or base_graph
  print(("  %-24s %8.3f µs   %+.3f µs per pair against stream order"):format(w[1], m, m - base))
end
