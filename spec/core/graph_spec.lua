-- cuasync.graph (lua/cuasync/graph.lua, the capture guard in lua/cuasync/capture.lua) and
-- programmatic dependent launch (kernels-src/cuasync/pdl.cuh). CPU: the refusals that need no
-- GPU. GPU: capture and replay of kernels, copies and a fill, verified against a CPU reference on
-- fresh data at every replay; update in place and re-instantiation; dot; every refusal inside the
-- function, with the stream out of capture mode and usable after; PDL pairs, plain and captured;
-- and whether a block that leaves by the watchdog's exit releases a dependent grid's wait.
local ffi = require("ffi")
local cuasync = require("cuasync")
local native = require("cuasync.native")
local bit = require("bit")
local H = require("helper")
local NOLIB = H.missing("libcuda.so.1")   -- a driver that is not there
require("cuasync.cdef.graph")

local N = 4096

describe("graph", function()
  local gpu_it = H.gpu_it(it, pending)

  it("refuses a function that is not one, a foreign stream and bad options before any GPU work", function()
    assert.has.error(function() cuasync.graph(5) end, "cuasync.graph: fn must be a function (got number)")
    assert.has.error(function() cuasync.graph(function() end, { stream = 0 }) end,
      "cuasync.graph: opts.stream must be a cuasync.stream() (got 0; the legacy default stream cannot be captured: leave stream out and cuasync.graph makes one)")
    assert.error_matches(function() cuasync.graph(function() end, { streams = 1 }) end,
      "cuasync.graph: unknown field 'streams' %(fields: name, stream%)")
    assert.error_matches(function() cuasync.graph(function() end, { name = 7 }) end, "cuasync.graph: name must be a string")
  end)

  it("without a driver, says so by name", function()
    local ok, out = H.luajit([[
      local c = require("cuasync")
      print("NODRIVER", pcall(c.graph, function() end))
    ]], { CUASYNC_CUDA_LIB = NOLIB })
    assert.is_true(ok, out)
    assert.truthy(out:find("NODRIVER\tfalse\t[^\n]*: cuasync.graph: a graph needs a GPU: no CUDA driver: " .. H.literal(NOLIB) .. " not found"), out)
  end)

  -- -- GPU -------------------------------------------------------------------------------------

  local mod
  local function kernels()
    mod = mod or cuasync.program{ file = "graph_steps.cu" }:compile()
    return mod:kernel("axpy", "ptr, ptr, f32, u32")
  end
  local function randoms(n)
    local h = cuasync.host_alloc(n * 4)
    local f = h:as("float")
    for i = 0, n - 1 do f[i] = (H.random_u32() % 2001) / 1000 - 1 end
    return h, f
  end
  local function capturing(s)
    local st = ffi.new("int[1]")
    native.check(native.C.cuasync_graph_capture_status(s.handle, st, native.errbuf, native.ERRLEN))
    return st[0]
  end

  gpu_it("captures launches, copies and a fill; every replay reads the host buffer anew and verifies", function()
    local axpy = kernels()
    local hx, fx = randoms(N)
    local hy, fy = randoms(N)
    local hout = cuasync.host_alloc(N * 4)
    local fout = hout:as("float")
    local x, y, z = cuasync.alloc(N * 4), cuasync.alloc(N * 4), cuasync.alloc(N * 4)
    x:upload(hx)
    local a = 0.5
    local G = cuasync.graph(function(s)
      local cfg = { grid = 8, block = 128, stream = s }
      y:upload(hy, nil, nil, s)
      z:fill(0x7F, nil, nil, s)
      for _ = 1, 3 do axpy:launch(cfg, y, x, a, N) end
      y:download_to(hout, nil, nil, s)
    end, { name = "axpy3" })
    assert.same({ count = 6, kernel = 3, memcpy = 2, memset = 1 }, G.nodes)
    assert.equal(5, G.edges.count)
    assert.equal(0, G.edges.programmatic)
    assert.equal(6, G.enqueued)   -- one node per call the function made
    for replay = 1, 3 do
      for i = 0, N - 1 do fy[i] = (H.random_u32() % 2001) / 1000 - 1 end   -- fresh data each replay
      ffi.fill(fout, N * 4, 0xFF)                                          -- poisoned (NaN)
      G:launch()
      cuasync.synchronize()
      for i = 0, N - 1 do
        local want = fy[i] + a * fx[i] + a * fx[i] + a * fx[i]
        if math.abs(fout[i] - want) > 1e-5 then
          error(("replay %d: y[%d] = %s, want %s"):format(replay, i, tostring(fout[i]), tostring(want)))
        end
      end
    end
    local zw = z:download("uint8_t", N * 4)
    for i = 0, N * 4 - 1 do assert(zw[i] == 0x7F, "the fill node did not run") end
    G:close()
    assert.has.error(function() G:launch() end, "cuasync.graph.launch: the graph is closed")
  end)

  gpu_it("a launch goes to the stream it names: the launch cache keys each stream apart (two streams print alike)", function()
    local axpy = kernels()
    local n = 1024
    local y, x = cuasync.alloc(n * 4), cuasync.alloc(n * 4)
    x:fill(0); y:fill(0)
    local s1, s2 = cuasync.stream(), cuasync.stream()
    assert.equal(tostring(s1), tostring(s2))
    axpy:launch({ grid = 4, block = 128, stream = s1 }, y, x, 0.5, n)
    s1:synchronize()
    -- the same grid and block on the capture stream: before, the runner made for s1 was taken
    local G = cuasync.graph(function(gs) axpy:launch({ grid = 4, block = 128, stream = gs }, y, x, 0.5, n) end)
    assert.equal(1, G.nodes.kernel)
    G:close(); s1:close(); s2:close(); x:close(); y:close()
  end)

  gpu_it("G:update: new arguments update in place; a changed topology re-instantiates and says why", function()
    local axpy = kernels()
    local hx, fx = randoms(N)
    local hy, fy = randoms(N)
    local x, y = cuasync.alloc(N * 4), cuasync.alloc(N * 4)
    x:upload(hx)
    local function steps(a, times)
      return function(s)
        for _ = 1, times do axpy:launch({ grid = 8, block = 128, stream = s }, y, x, a, N) end
      end
    end
    local G
    local function check(a, times, what)
      y:upload(hy)
      G:launch()
      local got = y:download("float", N)
      for i = 0, N - 1 do
        local want = fy[i]
        for _ = 1, times do want = want + a * fx[i] end
        if math.abs(got[i] - want) > 1e-5 then error(("%s: y[%d] = %s, want %s"):format(what, i, tostring(got[i]), tostring(want))) end
      end
    end
    G = cuasync.graph(steps(0.25, 2))
    check(0.25, 2, "captured")
    local _, how = G:update(steps(-1.5, 2))
    assert.equal("updated", how)
    check(-1.5, 2, "updated")
    _, how = G:update(steps(2, 3))
    assert.equal("re-instantiated: the topology changed (CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED)", how)
    assert.equal(3, G.nodes.kernel)
    check(2, 3, "re-instantiated")
    assert.same({ 1, 1 }, { G.updates, G.reinstantiations })
    -- an update whose function raises leaves the graph as it was
    assert.error_matches(function() G:update(function(s) steps(9, 1)(s); error("planted") end) end,
      "cuasync.graph.update: the function raised an error; the capture was ended and discarded, and the stream is usable: [^\n]*planted")
    assert.equal(0, capturing(G.stream))
    check(2, 3, "after a failed update")
    -- dot: a file naming the kernel; a missing directory is named
    local dir = H.tmpdir()
    assert.equal(dir .. "/g.dot", G:dot(dir .. "/g.dot"))
    local f = assert(io.open(dir .. "/g.dot"))
    local text = f:read("*a")
    f:close()
    assert.truthy(text:find("axpy", 1, true), text:sub(1, 300))
    assert.has.error(function() G:dot(dir .. "/no/such/g.dot") end,
      ('cuasync.graph.dot: the directory "%s/no/such" of "%s/no/such/g.dot" does not exist'):format(dir, dir))
    G:upload()
    G:launch()
    cuasync.synchronize()
  end)

  gpu_it("refuses by name what cannot be captured; the capture is discarded and the stream usable after", function()
    local axpy = kernels()
    local x, y = cuasync.alloc(N * 4), cuasync.alloc(N * 4)
    local hb = cuasync.host_alloc(N * 4)
    local s = cuasync.stream()
    local e = cuasync.event()
    local cases = {
      { function() cuasync.synchronize() end, "cuasync.synchronize: cannot run inside cuasync.graph's function: a wait on the host cannot be captured, a graph only records work to replay (wait after G:launch)" },
      { function() s:synchronize() end, "cuasync.stream.synchronize: cannot run inside cuasync.graph's function: a wait on the host" },
      { function() e:synchronize() end, "cuasync.event.synchronize: cannot run inside cuasync.graph's function: a wait on the host" },
      { function() e:record(s) end, "cuasync.event.record: cannot run inside cuasync.graph's function: an event inside a capture cannot be waited on or timed from the host" },
      { function() y:download("float", 4) end, "cuasync.buffer.download: cannot run inside cuasync.graph's function: a download returns the data now" },
      { function() y:upload(hb) end, "cuasync.buffer.upload: the copy runs on the default stream inside cuasync.graph's function: a graph captures only the stream given to the function (pass it: stream = s)" },
      { function(cs) y:upload(string.rep("x", 64), nil, nil, cs) end, "cuasync.buffer.upload: cannot run inside cuasync.graph's function with a string as host memory: a graph replays the copy from the same address every launch" },
      { function() y:fill(0, nil, nil, s) end, "cuasync.buffer.fill: the fill runs on a stream that is not capturing inside cuasync.graph's function" },
      { function() axpy:launch({ grid = 1, block = 32 }, y, x, 1, 32) end, "cuasync.launch: kernel 'axpy' runs on the default stream inside cuasync.graph's function: a graph captures only the stream given to the function (pass it: stream = s)" },
      { function() cuasync.graph(function() end) end, "cuasync.graph: cannot run inside cuasync.graph's function: graphs do not nest" },
      { function() cuasync.bench(function() end) end, "cuasync.bench: cannot run inside cuasync.graph's function: a benchmark times work with events" },
      { function() cuasync.bench_rounds({ { run = function() end } }) end, "cuasync.bench_rounds: cannot run inside cuasync.graph's function: its rounds time work with events" },
      { function() cuasync.reset() end, "cuasync.reset: cannot run inside cuasync.graph's function: a reset ends the context" },
    }
    local cs = cuasync.stream()
    for i, c in ipairs(cases) do
      local ok, err = pcall(cuasync.graph, function(st) axpy:launch({ grid = 1, block = 32, stream = st }, y, x, 1, 32); c[1](st) end,
                            { stream = cs })
      assert.is_false(ok, "case " .. i .. " was captured")
      err = tostring(err)
      assert.truthy(err:find("cuasync.graph: the function raised an error; the capture was ended and discarded, and the stream is usable: ", 1, true), err)
      assert.truthy(err:find(c[2], 1, true), ("case %d: %s"):format(i, err))
      assert.equal(0, capturing(cs), "case " .. i .. " left the stream capturing")
      -- the stream and the rest of cuasync work after it
      axpy:launch({ grid = 1, block = 32, stream = cs }, y, x, 1, 32)
      cs:synchronize()
      cuasync.synchronize()
    end
  end)

  gpu_it("a resource closed, or collected by the GC, while the stream captures is freed after the capture ends", function()
    local axpy = kernels()
    local x, y = cuasync.alloc(N * 4), cuasync.alloc(N * 4)
    x:fill(0); y:fill(0)
    local doomed = cuasync.alloc(1048576)
    local other = cuasync.program{ source = 'extern "C" __global__ void gone() {}', name = "gone.cu" }:compile()
    other:kernel("gone", "")
    local G = cuasync.graph(function(s)
      axpy:launch({ grid = 8, block = 128, stream = s }, y, x, 1, N)
      doomed:close()                                   -- cuMemFree while capturing: deferred
      other = nil
      collectgarbage(); collectgarbage()               -- a module's finaliser (cuModuleUnload): deferred
      axpy:launch({ grid = 8, block = 128, stream = s }, y, x, 1, N)
    end)
    assert.equal(2, G.nodes.kernel)
    G:launch()
    cuasync.synchronize()
    assert.truthy(tostring(doomed):find("closed", 1, true))
    assert.has.error(function() doomed:fill(0) end, "cuasync.buffer.fill: the buffer is closed")
  end)

  gpu_it("a graph after cuasync.reset() is refused by name", function()
    local ok, out = H.luajit([[
      local c = require("cuasync")
      local k = c.program{ file = "graph_steps.cu" }:compile():kernel("empty", "")
      local G = c.graph(function(s) k:launch({ grid = 1, block = 32, stream = s }) end)
      G:launch(); c.synchronize()
      c.reset()
      print("AFTER", pcall(G.launch, G))
      print("UPDATE", pcall(G.update, G, function() end))
    ]], nil, 60)
    assert.is_true(ok, out)
    assert.truthy(out:find("AFTER\tfalse\t[^\n]*cuasync.graph.launch: the graph was lost with cuasync.reset%(%)"), out)
    assert.truthy(out:find("UPDATE\tfalse\t[^\n]*cuasync.graph.update: the graph was lost with cuasync.reset%(%)"), out)
  end)

  gpu_it("programmatic dependent launch: producer -> consumer pairs verify, plain, prepared and captured (with PDL edges)", function()
    local m = cuasync.program{ file = "graph_steps.cu" }:compile()
    local prod, cons = m:kernel("pdl_producer", "ptr, u32, u32"), m:kernel("pdl_consumer", "ptr, ptr, u32")
    local n = 65536
    local buf, out = cuasync.alloc(n * 4), cuasync.alloc(n * 4)
    local function verify(v, what)
      local got = out:download("uint32_t", n)
      for i = 0, n - 1 do
        local want = bit.tobit(bit.bxor(v, i * 2654435761) * 3 + 1)
        if bit.tobit(got[i]) ~= want then error(("%s: out[%d] = %d, want %d"):format(what, i, bit.tobit(got[i]), want)) end
      end
    end
    local cfg_p, cfg_c = { grid = 64, block = 256 }, { grid = 64, block = 256, programmatic = true }
    for round = 1, 3 do
      local v = H.random_u32()
      out:fill(0xEE)
      prod:launch(cfg_p, buf, n, v)
      cons:launch(cfg_c, out, buf, n)
      verify(v, "k:launch round " .. round)
    end
    local run = cons:prepare(cfg_c, out, buf, n)
    local v = H.random_u32()
    out:fill(0xEE)
    prod:launch(cfg_p, buf, n, v)
    run()
    verify(v, "prepared")
    v = H.random_u32()
    local G = cuasync.graph(function(s)
      prod:launch({ grid = 64, block = 256, stream = s }, buf, n, v)
      cons:launch({ grid = 64, block = 256, stream = s, programmatic = true }, out, buf, n)
    end, { name = "pdl" })
    assert.same({ count = 2, kernel = 2 }, G.nodes)
    assert.same({ count = 1, programmatic = 1 }, G.edges)
    out:fill(0xEE)
    G:launch()
    verify(v, "graph")
  end)

  gpu_it("a block that leaves by the watchdog's exit releases a dependent grid's wait; the post-mortem names the hung kernel", function()
    local watched = cuasync.program{ file = "graph_steps.cu", watchdog = { timeout_ms = 300 } }:compile()
    local plain = cuasync.program{ file = "graph_steps.cu" }:compile()
    local hang = watched:kernel("pdl_hang", "ptr, u32")
    local after = plain:kernel("pdl_after", "ptr, ptr")
    local t0, t, flag = cuasync.alloc(8), cuasync.alloc(16), cuasync.alloc(4)
    for _, early in ipairs({ 0, 1 }) do
      flag:fill(0); t:fill(0); t0:fill(0)
      hang:launch({ grid = 4, block = 64 }, t0, early)
      after:launch({ grid = 4, block = 64, programmatic = true }, t, flag)
      local ok, err = pcall(cuasync.synchronize)
      assert.is_false(ok, "no hang was raised")
      assert.is_true(cuasync.is_hang(err), tostring(err))
      assert.truthy(tostring(err):find("cuasync.watchdog: kernel 'pdl_hang' hung: block (", 1, true), tostring(err))
      local start = tonumber(t0:download("uint64_t", 1)[0])
      local tt = t:download("uint64_t", 2)
      local began, released = (tonumber(tt[0]) - start) / 1e6, (tonumber(tt[1]) - start) / 1e6
      assert.equal(1, flag:download("uint32_t", 1)[0], "the dependent's wait was never released")
      print(("\nPDL after a watchdog exit (launch_dependents %s): the dependent began %.1f ms and left its wait %.1f ms after the hung grid began (timeout 300 ms)"):format(
        early == 1 and "called first" or "never called", began, released))
      assert.truthy(released >= 250, ("the dependent left its wait after %.1f ms, before the hung grid exited"):format(released))
      if early == 1 then
        assert.truthy(began < 150, ("with launch_dependents first the dependent began only after %.1f ms"):format(began))
      else
        assert.truthy(began >= 250, ("without launch_dependents the dependent began after %.1f ms"):format(began))
      end
    end
  end)
end)
