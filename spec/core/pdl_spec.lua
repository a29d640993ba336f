-- Programmatic dependent launch checked from the compiled code (lua/cuasync/pdl.lua over
-- model/pdl.lua). CPU: cuasync.pdl.check on programs NVRTC compiles here (a wait in the kernel,
-- in a called function, in a template, in a comment only, none); the refusal, the notes and the
-- G:dot annotation through the functions the launch path calls, on kernel records over those
-- compiles; a module without PTX noted, not refused. GPU: the refusal on real launches, prepares
-- and captures before anything runs; a correct pair runs and verifies without a note, and one
-- after a primary that never triggers with one; G:dot of a real graph carries the check.
local bit = require("bit")
local cuasync = require("cuasync")
local pdl = require("cuasync.pdl")
local util = require("cuasync.util")
local H = require("helper")

local SOURCE = [[
#include <cuasync/pdl.cuh>
// producer: lets its dependent launch early
extern "C" __global__ void producer(unsigned *buf, unsigned n, unsigned v)
{
    cuasync::pdl::launch_dependents();
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) buf[i] = v ^ (i * 2654435761u);
}
// lazy_producer: the same writes, never a trigger
extern "C" __global__ void lazy_producer(unsigned *buf, unsigned n, unsigned v)
{
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) buf[i] = v ^ (i * 2654435761u);
}
__device__ __noinline__ void wait_for_producer() { cuasync::pdl::wait(); }
// consumer: waits in a function it calls
extern "C" __global__ void consumer(unsigned *out, const unsigned *buf, unsigned n)
{
    wait_for_producer();
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) out[i] = buf[i] * 3u + 1u;
}
// consumer2: a name that extends consumer's, and never waits
extern "C" __global__ void consumer2(unsigned *out, const unsigned *buf, unsigned n)
{
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) out[i] = buf[i] * 3u + 1u;
}
// commented: the wait only in a comment the PTX carries
extern "C" __global__ void commented(unsigned *out, const unsigned *buf, unsigned n)
{
    asm volatile("// griddepcontrol.wait; (a comment, not the instruction)");
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) out[i] = buf[i] * 3u + 1u;
}
template <int K> __global__ void scaled(unsigned *out, const unsigned *buf, unsigned n)
{
    cuasync::pdl::wait();
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) out[i] = buf[i] * K;
}
]]

local REFUSAL = "cuasync.launch: programmatic = true: kernel 'consumer2' never waits for the grid before it (its PTX has no griddepcontrol.wait in its entry, which calls no function): its reads of the primary's output would race (call cuasync::pdl::wait() before it reads what the grid before it wrote, or leave programmatic out)"
local IDLE = "programmatic = true on kernel 'consumer' launched after kernel 'lazy_producer' gains no overlap: 'lazy_producer' never calls griddepcontrol.launch_dependents, so its dependent starts only as its blocks exit (call cuasync::pdl::launch_dependents() in 'lazy_producer' once its dependent may start)"

local function program() return cuasync.program{ name = "pdl_check.cu", source = SOURCE, expressions = { "scaled<3>" } } end

-- How many times text was noted (util.note says a text once per process).
local function noted(text)
  local n = 0
  for _, t in ipairs(util.notes) do if t == text then n = n + 1 end end
  return n
end

describe("pdl", function()
  local gpu_it = H.gpu_it(it, pending)

  -- a kernel record as the launch path reads it (kernel.lua's fields), over a real compile
  local prog, entry
  local function record(name, label)
    prog = prog or program()
    entry = entry or prog:build()
    return { name = label or name, lowered = entry.lowered[name] or name, module = { entry = entry, name = prog.name }, generation = -1 }
  end

  describe("check", function()
    it("reads a compiled program's kernels with no GPU: a wait in a called function, a template, a comment, none", function()
      local p = program()
      local r = cuasync.pdl.check(p, "consumer")
      assert.is_true(r.known)
      assert.is_true(r.wait)
      assert.is_false(r.launch_dependents)
      assert.equal(1, #r.calls)
      assert.same(r.calls, r.found_in.wait)   -- found in the called function, not the entry
      assert.is_nil(r.refusal)
      assert.truthy(r.note:find("never calls griddepcontrol.launch_dependents", 1, true))
      local c2 = cuasync.pdl.check(p, "consumer2")
      assert.is_false(c2.wait)
      assert.equal(REFUSAL, c2.refusal)
      assert.is_false(cuasync.pdl.check(p, "commented").wait)
      local t = cuasync.pdl.check(p, "scaled<3>")
      assert.is_true(t.wait)
      assert.equal("scaled<3>", t.kernel)
      assert.truthy(t.entry:find("^_Z6scaledILi3EEvPjPKjj"), t.entry)
      local pr = cuasync.pdl.check(p, "producer")
      assert.is_true(pr.launch_dependents)
      assert.is_false(pr.wait)
      assert.is_nil(pr.note)
    end)

    it("reads every kernel of a program by name, a module's and the project's own", function()
      local all = cuasync.pdl.check(program())
      local names = {}
      for n in pairs(all) do names[#names + 1] = n end
      table.sort(names)
      assert.same({ "commented", "consumer", "consumer2", "lazy_producer", "producer", "scaled<3>" }, names)
      local steps = cuasync.program{ file = "graph_steps.cu" }
      assert.is_true(cuasync.pdl.check(steps, "pdl_consumer").wait)
      assert.is_true(cuasync.pdl.check(steps:compile(), "pdl_producer").launch_dependents)   -- a module, not loaded
    end)

    it("refuses what it cannot read by name", function()
      assert.has.error(function() cuasync.pdl.check(5) end,
        "cuasync.pdl.check: prog must be a cuasync.program{...}, a module or a kernel (got 5)")
      assert.has.error(function() cuasync.pdl.check({}) end,
        "cuasync.pdl.check: prog must be a cuasync.program{...}, a module or a kernel (got an empty table)")
      assert.has.error(function() cuasync.pdl.check(program(), "consume") end,
        "cuasync.pdl.check: program pdl_check.cu has no kernel 'consume' (its kernels: producer, lazy_producer, consumer, consumer2, commented, _Z6scaledILi3EEvPjPKjj; a C++ name needs the program's expressions)")
      assert.has.error(function() cuasync.pdl.check(program(), 7) end, "cuasync.pdl.check: kernel must be a string (got number)")
    end)
  end)

  describe("the launch path, on kernel records over a real compile", function()
    it("refuses programmatic = true on a kernel that never waits; takes one that waits; leaves others alone", function()
      assert.has.error(function() pdl.prepared(record("consumer2"), { programmatic = true }) end, REFUSAL)
      assert.has.error(function() pdl.prepared(record("commented"), { programmatic = true }) end,
        (REFUSAL:gsub("consumer2", "commented")))
      assert.equal("", pdl.prepared(record("consumer"), { programmatic = true }))
      assert.equal("", pdl.prepared(record("consumer2"), { programmatic = false }))   -- only a dependent must wait
    end)

    it("reads a kernel's PTX once: its facts stay on the kernel", function()
      local k = record("consumer")
      pdl.prepared(k, { programmatic = true })
      local facts = k.pdl
      assert.is_true(facts.wait)
      pdl.prepared(k, { programmatic = true })
      assert.equal(facts, k.pdl)
      local r = cuasync.pdl.check(k)   -- a kernel alone: its facts, copied
      assert.is_true(r.wait)
      assert.equal("consumer", r.kernel)
      r.calls[1], r.counts.wait = "changed", 99
      assert.same({ 1, "_Z17wait_for_producerv" }, { k.pdl.counts.wait, k.pdl.calls[1] })
    end)

    it("notes, once, a programmatic launch after a kernel that never triggers; none after one that does", function()
      -- labelled apart from the GPU spec's kernels: a text is noted once per process
      local lazy, prod, cons = record("lazy_producer", "cpu_lazy"), record("producer", "cpu_producer"), record("consumer", "cpu_consumer")
      local before = #util.notes
      for _ = 1, 3 do
        pdl.launched("spec-stream", prod, false)
        pdl.launched("spec-stream", cons, true)
      end
      assert.equal(before, #util.notes)
      for _ = 1, 3 do
        pdl.launched("spec-stream", lazy, false)
        pdl.launched("spec-stream", cons, true)
      end
      assert.equal(1, noted((IDLE:gsub("lazy_producer", "cpu_lazy"):gsub("'consumer'", "'cpu_consumer'"))))
      pdl.launched("other-stream", cons, true)   -- nothing before it on its stream
      assert.equal(before + 1, #util.notes)
    end)

    it("notes, and does not refuse, a kernel whose module has no PTX", function()
      local k = { name = "blind", lowered = "blind", module = { entry = { cubin = "\127ELF", lowered = {} }, name = "blind.cubin" }, generation = -1 }
      pdl.prepared(k, { programmatic = true })
      assert.equal(1, noted("programmatic dependent launch: cannot tell whether kernel 'blind' calls griddepcontrol.wait: program blind.cubin has no PTX to read: its module holds a cubin alone (not checked; launched as asked)"))
      local r = cuasync.pdl.check({ entry = k.module.entry, name = "blind.cubin" }, "blind")
      assert.is_false(r.known)
      assert.is_nil(r.wait)
      assert.truthy(r.note:find("has no PTX to read", 1, true))
    end)

    it("annotates a graph's dot with each programmatic node's check", function()
      local rec = { keep = {}, count = 0, list = {}, depth = 0 }   -- as capture.lua keeps it
      local function node(name, programmatic)
        rec.count = rec.count + 1
        rec.list[#rec.list + 1] = { kind = "kernel" }
        pdl.node(rec, record(name), programmatic)
      end
      node("producer", false); node("consumer", true)
      node("lazy_producer", false); node("consumer", true)
      rec.count = rec.count + 1   -- a copy node
      rec.list[#rec.list + 1] = { kind = "memcpy" }
      node("consumer", true)
      local top = rec.list        -- a conditional body: its own list, numbered from 1
      rec.list, rec.depth = {}, 1
      node("producer", false); node("consumer", true)
      rec.list, rec.depth = top, 0
      local path = H.tmpdir() .. "/g.dot"
      H.write(path, 'digraph dot {\n"graph_1_node_0" [label="driver"];\n}\n')
      pdl.annotate_dot(path, rec.keep)
      local dot = H.read(path)
      assert.truthy(dot:find('^digraph dot {\n"graph_1_node_0" %[label="driver"%];\n  subgraph cluster_cuasync_pdl {'), dot)
      assert.truthy(dot:find('cuasync_pdl_node_2 [shape = "note", color = "darkgreen", label = "node 2 \'consumer\' (programmatic = true)\\nwaits: calls griddepcontrol.wait\\nafter node 1 \'producer\': it calls griddepcontrol.launch_dependents"];', 1, true), dot)
      assert.truthy(dot:find('cuasync_pdl_node_4 [shape = "note", color = "orange", label = "node 4 \'consumer\' (programmatic = true)\\nwaits: calls griddepcontrol.wait\\nafter node 3 \'lazy_producer\': it never calls griddepcontrol.launch_dependents: no overlap gained"];', 1, true), dot)
      assert.truthy(dot:find("node 5 is not a kernel: nothing to overlap with", 1, true), dot)
      assert.truthy(dot:find('cuasync_pdl_node_body_4 [shape = "note", color = "darkgreen", label = "a conditional body\'s node 2 \'consumer\' (programmatic = true)\\nwaits: calls griddepcontrol.wait\\nafter node 1 \'producer\': it calls griddepcontrol.launch_dependents"];', 1, true), dot)
      assert.truthy(dot:find("\n  }\n}\n$"), dot)
      local plain = H.tmpdir() .. "/plain.dot"   -- no programmatic node: the driver's file as it was
      H.write(plain, "digraph dot {\n}\n")
      pdl.annotate_dot(plain, {})
      assert.equal("digraph dot {\n}\n", H.read(plain))
    end)
  end)

  -- -- GPU -------------------------------------------------------------------------------------

  local N = 65536
  local function pair()
    local m = program():compile()
    return { prod = m:kernel("producer", "ptr, u32, u32"), lazy = m:kernel("lazy_producer", "ptr, u32, u32"),
             cons = m:kernel("consumer", "ptr, ptr, u32"), racy = m:kernel("consumer2", "ptr, ptr, u32") },
           cuasync.alloc(N * 4), cuasync.alloc(N * 4)
  end
  local function verify(out, v, what)
    local got = out:download("uint32_t", N)
    for i = 0, N - 1 do
      local want = bit.tobit(bit.bxor(v, i * 2654435761) * 3 + 1)
      if bit.tobit(got[i]) ~= want then error(("%s: out[%d] = %d, want %d"):format(what, i, bit.tobit(got[i]), want)) end
    end
  end
  local function untouched(out, what)
    local got = out:download("uint8_t", N * 4)
    for i = 0, N * 4 - 1 do if got[i] ~= 0xEE then error(("%s: byte %d was written (%d): the kernel ran"):format(what, i, got[i])) end end
  end

  gpu_it("refuses programmatic = true on a kernel that never waits before the driver sees it: k:launch, k:prepare, a capture #gpu", function()
    local k, buf, out = pair()
    out:fill(0xEE)
    k.prod:launch({ grid = 64, block = 256 }, buf, N, 1)
    assert.has.error(function() k.racy:launch({ grid = 64, block = 256, programmatic = true }, out, buf, N) end, REFUSAL)
    assert.has.error(function() k.racy:prepare({ grid = 64, block = 256, programmatic = true }, out, buf, N) end, REFUSAL)
    assert.has.error(function() k.racy:launch({ grid = 64, block = 256, programmatic = true }, out, buf, N) end, REFUSAL)   -- again: nothing cached
    cuasync.synchronize()
    untouched(out, "after the refusals")
    local s = cuasync.stream()
    local ok, err = pcall(cuasync.graph, function(gs)
      k.prod:launch({ grid = 64, block = 256, stream = gs }, buf, N, 1)
      k.racy:launch({ grid = 64, block = 256, stream = gs, programmatic = true }, out, buf, N)
    end, { stream = s })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("cuasync.graph: the function raised an error; the capture was ended and discarded, and the stream is usable: ", 1, true), tostring(err))
    assert.truthy(tostring(err):find(REFUSAL, 1, true), tostring(err))
    k.racy:launch({ grid = 64, block = 256, stream = s }, out, buf, N)   -- without programmatic it runs
    s:synchronize()
    verify(out, 1, "the plain launch after the refused capture")
  end)

  gpu_it("a pair that waits in a called function and triggers runs and verifies, plain, prepared and captured, with no note #gpu", function()
    local k, buf, out = pair()
    local before = #util.notes
    local cfg_p, cfg_c = { grid = 64, block = 256 }, { grid = 64, block = 256, programmatic = true }
    for round = 1, 3 do
      local v = H.random_u32()
      out:fill(0xEE)
      k.prod:launch(cfg_p, buf, N, v)
      k.cons:launch(cfg_c, out, buf, N)
      verify(out, v, "k:launch round " .. round)
    end
    local run = k.cons:prepare(cfg_c, out, buf, N)
    local v = H.random_u32()
    out:fill(0xEE)
    k.prod:launch(cfg_p, buf, N, v)
    run()
    verify(out, v, "prepared")
    v = H.random_u32()
    local G = cuasync.graph(function(s)
      k.prod:launch({ grid = 64, block = 256, stream = s }, buf, N, v)
      k.cons:launch({ grid = 64, block = 256, stream = s, programmatic = true }, out, buf, N)
    end, { name = "pdl_checked" })
    assert.same({ count = 1, programmatic = 1 }, G.edges)
    out:fill(0xEE)
    G:launch()
    verify(out, v, "graph")
    assert.same({}, { unpack(util.notes, before + 1) })
  end)

  gpu_it("a programmatic launch after a primary that never triggers runs, verifies, and is noted once #gpu", function()
    local k, buf, out = pair()
    for round = 1, 3 do
      local v = H.random_u32()
      out:fill(0xEE)
      k.lazy:launch({ grid = 64, block = 256 }, buf, N, v)
      k.cons:launch({ grid = 64, block = 256, programmatic = true }, out, buf, N)
      verify(out, v, "round " .. round)
    end
    assert.equal(1, noted(IDLE))
  end)

  gpu_it("G:dot carries the check of each programmatic node #gpu", function()
    local k, buf, out = pair()
    local v = H.random_u32()
    local G = cuasync.graph(function(s)
      k.prod:launch({ grid = 64, block = 256, stream = s }, buf, N, v)
      k.cons:launch({ grid = 64, block = 256, stream = s, programmatic = true }, out, buf, N)
      k.lazy:launch({ grid = 64, block = 256, stream = s }, buf, N, v)
      k.cons:launch({ grid = 64, block = 256, stream = s, programmatic = true }, out, buf, N)
    end, { name = "pdl_dot" })
    out:fill(0xEE)
    G:launch()
    verify(out, v, "graph")
    local path = G:dot(H.tmpdir() .. "/pdl.dot")
    local dot = assert(H.read(path))
    assert.truthy(dot:find("subgraph cluster_cuasync_pdl {", 1, true), dot)
    assert.truthy(dot:find("node 2 'consumer' (programmatic = true)\\nwaits: calls griddepcontrol.wait\\nafter node 1 'producer': it calls griddepcontrol.launch_dependents", 1, true), dot)
    assert.truthy(dot:find("after node 3 'lazy_producer': it never calls griddepcontrol.launch_dependents: no overlap gained", 1, true), dot)
    assert.truthy(dot:find("}%s*$"), dot)
  end)
end)
