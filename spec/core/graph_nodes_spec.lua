-- cuasync.graph's node edits (lua/cuasync/graph/nodes.lua), what a graph keeps and checks at
-- launch (graph/held.lua) and conditional nodes (graph/conditional.lua, kernels-src/cuasync/graph.cuh).
-- CPU: every refusal that needs no GPU, on records made by hand (a capture is opened by hand
-- where a graph would need a GPU). GPU: a convergence loop as a while node against a CPU
-- reference (output poisoned first), an if/else node, node edits without re-instantiation, and
-- the graphs refused at launch (closed buffer, moved tensor map, unloaded module).
local ffi = require("ffi")
local cuasync = require("cuasync")
local native = require("cuasync.native")
local capture = require("cuasync.capture")
local signature = require("cuasync.signature")
local buffer = require("cuasync.buffer")
local device = require("cuasync.device")
local nodes = require("cuasync.graph.nodes")
local held = require("cuasync.graph.held")
local conditional = require("cuasync.graph.conditional")
local H = require("helper")
local jacobi_reference = require("support.jacobi")

local FILE = "spec/core/graph_nodes_spec.lua"
local function raised(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  return tostring(e)
end

-- A graph as graph/init.lua makes it, without the driver: its record, and an open handle.
local function fake_graph(list, named)
  local rec = { list = list, named = named or {}, depth = 0 }
  local G = { name = "fake", rec = rec, h = { open = 1 }, epoch = -1 }
  return G, rec
end

describe("graph nodes (CPU)", function()
  it("a cond parameter takes only a condition of the open capture", function()
    assert.equal("cond", cuasync.signature("ptr, cond")[2].kind)
    assert.equal(8, cuasync.signature("cond")[1].size)
    local slot = ffi.new("uint64_t[1]")
    local set = signature.setter(2, { kind = "cond", size = 8 }, slot)
    local msg = raised(set, 5)
    assert.truthy(msg:find("^" .. FILE .. ":%d+: cuasync%.launch: argument 2 %(cond%) must be a condition made by g:condition{%.%.%.} inside cuasync%.graph's function %(got 5%)$"), msg)
    local rec = { name = "loop" }
    local c = capture.condition(rec, 7ULL, nil, "c1", 1)
    msg = raised(set, c)   -- no capture open: outside its graph
    assert.truthy(msg:find("cuasync.launch: argument 2 (cond) is cuasync.graph condition 'c1' of graph 'loop', used outside its graph", 1, true), msg)
    capture.open({ name = "other" })
    msg = raised(set, c)   -- another capture open
    capture.close()
    assert.truthy(msg:find("used outside its graph", 1, true), msg)
    capture.open(rec)
    set(c)
    capture.close()
    assert.equal(7ULL, slot[0])
  end)

  it("G.nodes[i] out of range, an unknown name and a body node are refused by name", function()
    local G = fake_graph({ { kind = "memset", depth = 0, index = 1 }, { kind = "conditional", type = "while", depth = 0, index = 2 } },
      { inner = { kind = "kernel", depth = 1, kernel = { name = "k" } } })
    local msg = raised(nodes.get, G, 3)
    assert.truthy(msg:find("^" .. FILE .. ":%d+: cuasync%.graph%.nodes: node 3 is out of range: graph 'fake' has 2 nodes %(1%.%.2%)$"), msg)
    msg = raised(nodes.get, G, 0)
    assert.truthy(msg:find("node 0 is out of range", 1, true), msg)
    msg = raised(nodes.get, G, "relax")
    assert.truthy(msg:find("cuasync.graph.nodes: graph 'fake' has no node named \"relax\" (named: inner;", 1, true), msg)
    msg = raised(nodes.get, G, "inner")
    assert.truthy(msg:find("node \"inner\" is inside a conditional body: edit it with G:update(fn)", 1, true), msg)
    msg = raised(nodes.get, G, 1.5)
    assert.truthy(msg:find("a node is taken by number or name (got 1.5)", 1, true), msg)
    -- the counts table answers kinds with no node as nil, and numbers as nodes
    local counts = nodes.indexed(G, { count = 2, memset = 1, conditional = 1 })
    assert.is_nil(counts.kernel)
    assert.equal(1, counts.memset)
    assert.equal(nodes.get(G, 1), counts[1])   -- one object per node
    msg = raised(function() return counts[9] end)
    assert.truthy(msg:find("node 9 is out of range", 1, true), msg)
  end)

  it("enabling a conditional node, setting one, and a stale or driverless node are refused by name", function()
    local G = fake_graph({ { kind = "conditional", type = "while", depth = 0, index = 1, node = ffi.cast("CUgraphNode", 1) },
                           { kind = "memset", depth = 0, index = 2, why_no_node = "cuStreamGetCaptureInfo: not provided by this driver (needs CUDA 12.3)" } })
    local msg = raised(function() nodes.get(G, 1):enable(false) end)
    assert.truthy(msg:find("^" .. FILE .. ":%d+: cuasync%.graph%.node%.enable: node 1 %(while conditional%) cannot be enabled or disabled: the driver toggles only kernel, fill %(memset%) and copy %(memcpy%) nodes$"), msg)
    msg = raised(function() nodes.get(G, 1):enable(1) end)
    assert.truthy(msg:find("cuasync.graph.node.enable: on must be a boolean (got 1)", 1, true), msg)
    msg = raised(function() nodes.get(G, 1):set(1) end)
    assert.truthy(msg:find("cuasync.graph.node.set: node 1 (while conditional) has no arguments to set", 1, true), msg)
    msg = raised(function() nodes.get(G, 2):set(0) end)
    assert.truthy(msg:find("cuasync.graph.node.set: node 2 (fill) cannot be edited: the driver gave no node for it at capture (cuStreamGetCaptureInfo: not provided by this driver (needs CUDA 12.3))", 1, true), msg)
    local n2 = nodes.get(G, 2)
    G.rec = { list = {}, named = {} }   -- as after G:update
    msg = raised(function() n2:enable(true) end)
    assert.truthy(msg:find("cuasync.graph.node.enable: node 2 (fill) belongs to graph 'fake' as it was before G:update: take it again from G.nodes", 1, true), msg)
    G.h.open = 0
    msg = raised(function() n2:enable(true) end)
    assert.truthy(msg:find("cuasync.graph.node.enable: the graph is closed", 1, true), msg)
  end)

  it("node:set runs a plan's tensor-map check first, as k:prepare does (a map of another box would hang the replay)", function()
    local seen = {}
    local hooks = { map_check = function(name, i, m)
      seen[#seen + 1] = { name, i, m }
      return function() error("cuasync.launch: kernel 'copy' argument 1: the map's box is not the plan's", 0) end
    end }
    local k = { name = "copy", sig = "tensormap, ptr", generation = native.state.generation,
                params = cuasync.signature("tensormap, ptr"), module = { program = { hooks = hooks } } }
    local G = fake_graph({ { kind = "kernel", kernel = k, depth = 0, index = 1, node = ffi.cast("CUgraphNode", 1) } })
    local msg = raised(function() nodes.get(G, 1):set({}, 0) end)
    assert.truthy(msg:find("the map's box is not the plan's", 1, true), msg)
    assert.same({ { "copy", 1, 1 } }, seen)
  end)

  it("node:set with the wrong count or types of a kernel's arguments is refused by name, before the driver", function()
    local k = { name = "axpy", sig = "ptr, ptr, f32, u32", generation = native.state.generation,
                params = cuasync.signature("ptr, ptr, f32, u32") }
    local G = fake_graph({ { kind = "kernel", kernel = k, depth = 0, index = 1, label = "relax", node = ffi.cast("CUgraphNode", 1) } })
    G.rec.named.relax = G.rec.list[1]
    local n = nodes.get(G, "relax")
    local msg = raised(function() n:set(1, 2) end)
    assert.truthy(msg:find("^" .. FILE .. ":%d+: cuasync%.graph%.node%.set: node 1 %(kernel 'axpy', named 'relax'%) takes 4 arguments %(ptr, ptr, f32, u32%), got 2$"), msg)
    msg = raised(function() n:set(1, 2, "x", 4) end)
    assert.truthy(msg:find("cuasync.graph.node.set: node 1 (kernel 'axpy', named 'relax'): argument 3 (f32) must be a number (got string)", 1, true), msg)
    msg = raised(function() n:set(1, 2, 0.5, -1) end)
    assert.truthy(msg:find("argument 4 (u32) must be an integer in 0..4294967295 (got -1)", 1, true), msg)
    msg = raised(function() n:set(buffer.buffer_t(0, 16, 0, 0), 2, 0.5, 1) end)
    assert.truthy(msg:find("argument 1 (ptr) is a closed buffer", 1, true), msg)
    k.generation = native.state.generation - 1
    msg = raised(function() n:set(1, 2, 0.5, 1) end)
    assert.truthy(msg:find("its kernel belongs to the CUDA context cuasync.reset() ended", 1, true), msg)
  end)

  it("G:launch's check names the node and parameter of a closed buffer or a moved tensor map, once per change", function()
    local tm = cuasync.tensormap{ ptr = 2 ^ 20, bytes = 2 ^ 30, encode = false, dtype = "f32", dims = { 4096, 4096 }, box = { 32, 16 } }
    local closed = buffer.buffer_t(0, 16, 0, 0)
    local k = { name = "tile", module = { handle = { loaded = 1 }, name = "tiles" }, params = cuasync.signature("tensormap, ptr") }
    local info = { kind = "kernel", kernel = k, args = { tm, closed }, depth = 0 }
    local G = fake_graph({ info })
    held.adopt(G.rec.list)
    assert.equal(3, #info.refs)   -- the module, the map, the buffer
    local msg = raised(held.check, G)
    assert.truthy(msg:find("^" .. FILE .. ":%d+: cuasync%.graph%.launch: graph 'fake' node 1 %(kernel 'tile'%) argument 2 %(ptr%): the buffer was closed after capture; a replay would touch freed memory %(capture it again with G:update%(fn%), or give the node live ones with G%.nodes%[1%]:set%(%.%.%.%)%)$"), msg)
    info.args[2], info.refs = 0x1000, nil
    info.refs = held.refs(info)
    G.epoch = -1
    held.check(G)
    assert.equal(capture.state.epoch, G.epoch)   -- checked: the next launch compares one number
    local before = capture.state.epoch
    tm:replace_address(2 ^ 21, 2 ^ 30)
    assert.equal(before + 1, capture.state.epoch)   -- a held map moved
    msg = raised(held.check, G)
    assert.truthy(msg:find("node 1 (kernel 'tile') argument 1 (tensormap): the tensor map's address changed since capture (tm:replace_address: 0x100000 then, 0x200000 now)", 1, true), msg)
    tm:replace_address(2 ^ 20, 2 ^ 30)
    held.check(G)
    k.module.handle.loaded = 0
    G.epoch = -1
    msg = raised(held.check, G)
    assert.truthy(msg:find("node 1 (kernel 'tile') its module (program tiles): the module was unloaded after capture", 1, true), msg)
  end)

  it("the builder refuses a driver without conditional nodes, nesting or if/else, and a capture that ended", function()
    local rec = { name = "g", depth = 0, list = {}, named = {}, keep = {}, count = 0 }
    local g = conditional.new(rec)
    local c = capture.condition(rec, 1ULL, nil, "c1", 1)
    local msg = raised(function() g:while_(c, function() end) end)
    assert.truthy(msg:find("^" .. FILE .. ":%d+: cuasync%.graph%.while_: this builder belongs to a capture that has ended"), msg)
    local real = device.driver_version
    capture.open(rec)
    local ok, err = pcall(function()
      device.driver_version = function() return 12020 end
      local m = raised(function() g:while_(c, function() end) end)
      assert.truthy(m:find("cuasync.graph.while_: conditional nodes need a CUDA 12.3 driver or newer (this one is 12.2)", 1, true), m)
      device.driver_version = function() return 12030 end
      rec.depth = 1
      m = raised(function() g:if_(c, function() end) end)
      assert.truthy(m:find("cuasync.graph.if_: conditional nodes nested in a body need a CUDA 12.4 driver or newer (this one is 12.3)", 1, true), m)
      rec.depth = 0
      device.driver_version = function() return 12060 end
      m = raised(function() g:if_(c, function() end, function() end) end)
      assert.truthy(m:find("cuasync.graph.if_: if/else nodes (two bodies) need a CUDA 12.8 driver or newer (this one is 12.6)", 1, true), m)
      m = raised(function() g:while_(5, function() end) end)
      assert.truthy(m:find("cuasync.graph.while_: c must be a condition made by g:condition{...} (got 5)", 1, true), m)
      m = raised(function() g:while_(c, 5) end)
      assert.truthy(m:find("cuasync.graph.while_: fn must be a function (got number)", 1, true), m)
      m = raised(function() g:while_(capture.condition({}, 1ULL, nil, "c9", 0), function() end) end)
      assert.truthy(m:find("belongs to another capture", 1, true), m)
      m = raised(function() g:name("1x") end)
      assert.truthy(m:find("cuasync.graph.name: label must not be empty or start with a digit", 1, true), m)
      m = raised(function() g:name("kernel") end)   -- G.nodes.kernel is the count of kernel nodes
      assert.truthy(m:find('cuasync.graph.name: label "kernel" is a count G.nodes keeps (G.nodes.kernel is how many such nodes the graph has): choose another name', 1, true), m)
      g:name("relax")
      assert.equal("relax", rec.next_label)
    end)
    device.driver_version = real
    capture.close()
    assert.is_nil(capture.state.active)   -- nothing left open
    if not ok then error(err, 0) end
  end)
end)

-- -- GPU ---------------------------------------------------------------------------------------

local SOURCE = [[
#include <cuasync/graph.cuh>
#include <cuasync/tma.cuh>
// The if/else test: c = (*v is odd).
extern "C" __global__ void odd(const unsigned *v, cuasync::graph::condition c)
{
  cuasync::graph::set_condition(c, *v & 1u);
}
extern "C" __global__ void scale(float *y, const float *x, float a, unsigned n)
{
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = a * x[i];
}
extern "C" __global__ void first_word(unsigned *out, const __grid_constant__ cuasync::tensormap map)
{
  if (threadIdx.x == 0) out[0] = (unsigned)(reinterpret_cast<const unsigned long long *>(&map)[0] & 0xffffffffu);
}
]]

describe("graph nodes (GPU)", function()
  local gpu_it = H.gpu_it(it, pending)
  local N = 256

  it("the spec's kernels compile with NVRTC (no GPU needed)", function()
    local ptx = cuasync.program{ name = "graph_nodes", source = SOURCE, arch = "sm_90a" }:ptx()
    assert.truthy(ptx:find("cudaGraphSetConditional", 1, true))
  end)

  local mod
  local function kernels()
    mod = mod or cuasync.program{ name = "graph_nodes", source = SOURCE }:compile()
    return mod
  end

  gpu_it("a while node runs a Jacobi loop until the device's residual check stops it, as the CPU reference does", function()
    -- the bundled loop kernel (examples/bench_graph_loop.lua and the guide run it too)
    local jacobi = cuasync.program{ file = "graph_loop.cu" }:compile():kernel("jacobi", "ptr, ptr, u32, f32, ptr, u32, cond")
    local N = 32   -- 1D Laplace from random values: at 256 points it takes more than max_iters sweeps
    local hx = cuasync.host_alloc(N * 4)
    local fx = hx:as("float")
    for i = 0, N - 1 do fx[i] = (H.random_u32() % 1000) / 1000 end
    local x, y, iters = cuasync.alloc(N * 4), cuasync.alloc(N * 4), cuasync.alloc(4)
    local tol, max_iters = 1e-3, 5000
    local G = cuasync.graph(function(s, g)
      x:upload(hx, nil, nil, s)
      iters:fill(0, nil, nil, s)
      local c = g:condition{ default = 1, name = "not_converged" }
      g:while_(c, function(s2)
        jacobi:launch({ grid = 1, block = N, stream = s2 }, x, y, N, tol, iters, max_iters, c)
        x:upload(y, nil, nil, s2)   -- y -> x, a copy node in the body
      end)
    end, { name = "jacobi" })
    assert.equal(1, G.nodes.conditional)
    local want_iters, want = jacobi_reference(fx, N, tol, max_iters)
    assert.is_true(want_iters > 10 and want_iters < max_iters, "the reference converges in a handful of sweeps")
    for _ = 1, 2 do   -- a replay starts again from hx: the same answer
      x:poison(); y:poison()
      G:launch()
      cuasync.synchronize()
      assert.equal(want_iters, iters:download("uint32_t", 1)[0])
      assert(cuasync.compare(x:download("float", N), want, { dtype = "f32", rtol = 0, atol = 1e-6 }))
    end
    G:close()
  end)

  gpu_it("an if/else node runs the body its condition picks, at each launch", function()
    local m = kernels()
    local odd = m:kernel("odd", "ptr, cond")
    local v, out = cuasync.alloc(4), cuasync.alloc(16)
    local G = cuasync.graph(function(s, g)
      local c = g:condition{}
      odd:launch({ grid = 1, block = 1, stream = s }, v, c)
      g:if_(c, function(s2) out:fill(0x11, nil, nil, s2) end, function(s2) out:fill(0x22, nil, nil, s2) end)
    end, { name = "branch" })
    for _, case in ipairs({ { 3, 0x11 }, { 4, 0x22 }, { 7, 0x11 } }) do
      v:upload(ffi.new("uint32_t[1]", case[1]))
      out:poison()
      G:launch(); cuasync.synchronize()
      local got = out:download("uint8_t", 16)
      for i = 0, 15 do assert.equal(case[2], got[i]) end
    end
  end)

  gpu_it("node:set and node:enable edit the instantiated graph in place: kernel, fill and copy nodes", function()
    local m = kernels()
    local scale = m:kernel("scale", "ptr, ptr, f32, u32")
    local n = 4096
    local hx = cuasync.host_alloc(n * 4)
    local fx = hx:as("float")
    for i = 0, n - 1 do fx[i] = (H.random_u32() % 2001) / 1000 - 1 end
    local x, y, z = cuasync.alloc(n * 4), cuasync.alloc(n * 4), cuasync.alloc(n * 4)
    local hout, hout2 = cuasync.host_alloc(n * 4), cuasync.host_alloc(n * 4)
    x:upload(hx)
    local G = cuasync.graph(function(s, g)
      g:name("clear")
      z:fill(0, nil, nil, s)
      g:name("scale")
      scale:launch({ grid = 8, block = 256, stream = s }, y, x, 2.0, n)
      g:name("out")
      y:download_to(hout, nil, nil, s)
    end, { name = "edits" })
    local function expect(host, a)
      local want = ffi.new("float[?]", n)
      for i = 0, n - 1 do want[i] = a * fx[i] end
      assert(cuasync.compare(host, want, { dtype = "f32", rtol = 0, atol = 0 }))
    end
    G:launch(); cuasync.synchronize()
    expect(hout, 2)
    G.nodes.scale:set(y, x, 3.0, n)                 -- by name
    y:poison(); G:launch(); cuasync.synchronize()
    expect(hout, 3)
    G.nodes[3]:set(hout2, y)                        -- the copy now lands in another host buffer
    G:launch(); cuasync.synchronize()
    expect(hout2, 3)
    G.nodes[1]:set(0x3F)                            -- the fill writes another byte
    z:poison(); G:launch(); cuasync.synchronize()
    local zb = z:download("uint8_t", 16)
    for i = 0, 15 do assert.equal(0x3F, zb[i]) end
    G:node("scale"):enable(false)                   -- skipped: y keeps its poison
    y:poison(); G:launch(); cuasync.synchronize()
    assert.is_true(hout2:as("uint32_t")[0] == y:download("uint32_t", 1)[0])
    G.nodes.scale:enable(true)
    G:launch(); cuasync.synchronize()
    expect(hout2, 3)
    assert.equal(0, G.updates); assert.equal(0, G.reinstantiations)
    local msg = raised(function() G.nodes.scale:set(y, x, 3.0) end)
    assert.truthy(msg:find("cuasync.graph.node.set: node 2 (kernel 'scale', named 'scale') takes 4 arguments (ptr, ptr, f32, u32), got 3", 1, true), msg)
    msg = raised(function() G.nodes.out:set(y, y) end)
    assert.truthy(msg:find("the destination must be a cuasync.host_alloc buffer, as captured", 1, true), msg)
    msg = raised(function() return G.nodes[4] end)
    assert.truthy(msg:find("node 4 is out of range: graph 'edits' has 3 nodes (1..3)", 1, true), msg)
  end)

  gpu_it("a node edit after an in-place G:update reaches the kernel (the nodes the instantiated graph was made from)", function()
    local m = kernels()
    local scale = m:kernel("scale", "ptr, ptr, f32, u32")
    local n = 1024
    local hx = cuasync.host_alloc(n * 4)
    for i = 0, n - 1 do hx:as("float")[i] = (H.random_u32() % 2001) / 1000 - 1 end
    local x, y = cuasync.alloc(n * 4), cuasync.alloc(n * 4)
    x:upload(hx)
    local function fn(a)
      return function(s, g)
        scale:launch({ grid = 4, block = 256, stream = s }, y, x, 1.0, n)
        g:name("mid")
        scale:launch({ grid = 4, block = 256, stream = s }, y, x, a, n)
      end
    end
    local G = cuasync.graph(fn(2.0), { name = "updated" })
    local _, how = G:update(fn(3.0))
    assert.equal("updated", how)
    for _, a in ipairs({ 5.0, -0.5 }) do
      G.nodes.mid:set(y, x, a, n)
      y:poison(); G:launch(); cuasync.synchronize()
      local want = ffi.new("float[?]", n)
      for i = 0, n - 1 do want[i] = a * hx:as("float")[i] end
      assert(cuasync.compare(y:download("float", n), want, { dtype = "f32", rtol = 0, atol = 0 }))
    end
    G:close()
  end)

  gpu_it("a runner last given its arguments outside a capture is refused inside one; a conditional graph's update re-instantiates; a closed graph's nodes say so", function()
    local m = kernels()
    local scale = m:kernel("scale", "ptr, ptr, f32, u32")
    local odd = m:kernel("odd", "ptr, cond")
    local n = 256
    local a, b, c2 = cuasync.alloc(n * 4), cuasync.alloc(n * 4), cuasync.alloc(n * 4)
    local s = cuasync.stream()
    local run = scale:prepare({ grid = 1, block = n, stream = s }, b, a, 1.0, n)
    run(c2, a, 2.0, n); s:synchronize()   -- given outside a capture: the graph could not know them
    local msg = raised(function() cuasync.graph(function() run() end, { stream = s }) end)
    assert.truthy(msg:find("kernel 'scale': a prepared runner called with no arguments inside cuasync.graph's function, after it was last given them outside: pass the arguments inside the function", 1, true), msg)
    local G = cuasync.graph(function() run(b, a, 3.0, n) end, { stream = s })   -- given inside: kept
    G:launch(s); s:synchronize()
    local v, out = cuasync.alloc(4), cuasync.alloc(16)
    local function branchy(gs, g)
      local c = g:condition{}
      odd:launch({ grid = 1, block = 1, stream = gs }, v, c)
      g:if_(c, function(s2) out:fill(0x11, nil, nil, s2) end)
    end
    local B = cuasync.graph(branchy, { name = "branchy" })
    local _, how = B:update(branchy)
    assert.equal("re-instantiated: the graph has conditional nodes (their conditions belong to the graph captured)", how)
    v:upload(ffi.new("uint32_t[1]", 3)); out:poison()
    B:launch(); cuasync.synchronize()
    assert.equal(0x11, out:download("uint8_t", 1)[0])
    B:close(); G:close()
    msg = raised(function() return G.nodes[1] end)
    assert.truthy(msg:find("cuasync.graph.nodes: the graph is closed", 1, true), msg)
  end)

  gpu_it("a graph keeps its buffers alive, and refuses to launch over a closed buffer, a moved tensor map or an unloaded module", function()
    local m = kernels()
    local first = m:kernel("first_word", "ptr, tensormap")
    local scale = m:kernel("scale", "ptr, ptr, f32, u32")
    local n = 1024
    -- buffers only the graph references once the capture is done: the GC must not free them
    -- (made before the capture: no allocation while a stream captures)
    local bufs = { cuasync.alloc(n * 4), cuasync.alloc(n * 4) }
    local G = cuasync.graph(function(s)
      local a, b = bufs[1], bufs[2]
      a:fill(0, nil, nil, s)
      scale:launch({ grid = 4, block = 256, stream = s }, b, a, 1.0, n)
    end, { name = "kept" })
    bufs = nil
    collectgarbage(); collectgarbage()
    G:launch(); cuasync.synchronize()
    -- a closed argument buffer
    local x, y = cuasync.alloc(n * 4), cuasync.alloc(n * 4)
    local G2 = cuasync.graph(function(s) scale:launch({ grid = 4, block = 256, stream = s }, y, x, 1.0, n) end, { name = "freed" })
    G2:launch(); cuasync.synchronize()
    y:close()
    local msg = raised(function() G2:launch() end)
    assert.truthy(msg:find("^" .. FILE .. ":%d+: cuasync%.graph%.launch: graph 'freed' node 1 %(kernel 'scale'%) argument 1 %(ptr%): the buffer was closed after capture"), msg)
    local y2 = cuasync.alloc(n * 4)
    G2.nodes[1]:set(y2, x, 1.0, n)                  -- live buffers again: it launches
    G2:launch(); cuasync.synchronize()
    -- a moved tensor map
    local t1, t2, out = cuasync.alloc(64 * 64 * 4), cuasync.alloc(64 * 64 * 4), cuasync.alloc(4)
    local tm = cuasync.tensormap{ buffer = t1, dtype = "f32", dims = { 64, 64 }, box = { 16, 16 } }
    local G3 = cuasync.graph(function(s) first:launch({ grid = 1, block = 32, stream = s }, out, tm) end, { name = "mapped" })
    G3:launch(); cuasync.synchronize()
    tm:replace_address(t2)
    msg = raised(function() G3:launch() end)
    assert.truthy(msg:find("cuasync.graph.launch: graph 'mapped' node 1 (kernel 'first_word') argument 2 (tensormap): the tensor map's address changed since capture", 1, true), msg)
    local _, how = G3:update(function(s) first:launch({ grid = 1, block = 32, stream = s }, out, tm) end)
    assert.equal("updated", how)
    G3:launch(); cuasync.synchronize()
    -- an unloaded module
    mod = nil
    m:close()
    msg = raised(function() G3:launch() end)
    assert.truthy(msg:find("cuasync.graph.launch: graph 'mapped' node 1 (kernel 'first_word') its module (program graph_nodes): the module was unloaded after capture", 1, true), msg)
  end)

  gpu_it("a condition passed to a kernel outside its graph, and a stale builder, are refused; nothing is left capturing", function()
    local m = kernels()
    local odd = m:kernel("odd", "ptr, cond")
    local v = cuasync.alloc(4)
    local kept_c, kept_g
    local G = cuasync.graph(function(s, g)
      kept_c, kept_g = g:condition{}, g
      odd:launch({ grid = 1, block = 1, stream = s }, v, kept_c)
      g:if_(kept_c, function() end)
    end, { name = "cond" })
    local msg = raised(function() odd:launch({ grid = 1, block = 1 }, v, kept_c) end)
    assert.truthy(msg:find("cuasync.launch: argument 2 (cond) is cuasync.graph condition 'c1' of graph 'cond', used outside its graph", 1, true), msg)
    msg = raised(function() kept_g:condition{} end)
    assert.truthy(msg:find("cuasync.graph.condition: this builder belongs to a capture that has ended", 1, true), msg)
    msg = raised(function() cuasync.graph(function(s) odd:launch({ grid = 1, block = 1, stream = s }, v, kept_c) end) end)
    assert.truthy(msg:find("used outside its graph", 1, true), msg)
    -- a condition made in the outer graph does not drive a node inside a body
    msg = raised(function()
      cuasync.graph(function(s, g)
        local c = g:condition{ default = 0 }
        g:while_(c, function(s2, g2) g2:if_(c, function() end) end)
      end)
    end)
    assert.truthy(msg:find("made in another graph level", 1, true), msg)
    assert.is_nil(capture.state.active)
    G:launch(); cuasync.synchronize()
  end)
end)
