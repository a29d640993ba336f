-- g:while_(c, fn, { unroll = n }) and cuasync.graph.while_(c, fn, { unroll = n })
-- (lua/cuasync/graph/conditional.lua): a while body of n copies of fn's work.
-- CPU: each refusal of opts, pinned (the builder's and the module-level form's, at the caller's
-- line); g:if_ refusing an opts table; and the body function called n times, rounds 1..n, in one
-- body capture, through conditional.lua loaded over a stand-in driver (no GPU: the driver calls
-- are recorded, the capture bookkeeping is the real one). GPU: the guarded Jacobi kernel
-- (kernels-src/graph_loop.cu, jacobi_guarded) in an unrolled while graph whose sweep count is not
-- a multiple of unroll, against the plain while graph and the CPU reference (x and y poisoned).
local ffi = require("ffi")
local cuasync = require("cuasync")
local capture = require("cuasync.capture")
local device = require("cuasync.device")
local streams = require("cuasync.stream")
local conditional = require("cuasync.graph.conditional")
local H = require("helper")
local jacobi_reference = require("support.jacobi")

local FILE = "spec/core/graph_unroll_spec.lua"
local function raised(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  return tostring(e)
end
local function pinned(msg, want)
  assert.truthy(msg:find("^" .. FILE .. ":%d+: " .. H.literal(want) .. "$"), msg)
end

-- A capture record as graph/init.lua makes one, without the driver.
local function fake_rec()
  return { name = "g", depth = 0, list = {}, named = {}, keep = {}, count = 0, handle = ffi.cast("CUstream", 0x6000) }
end

-- Run f() with rec open and the driver reported as CUDA 12.8; close it whatever happens.
local function inside(rec, f)
  local real = device.driver_version
  device.driver_version = function() return 12080 end
  capture.open(rec)
  local ok, err = pcall(f)
  capture.close()
  device.driver_version = real
  if not ok then error(err, 0) end
end

local WHILE = "cuasync.graph.while_: "
local REFUSED = {   -- opts -> the message after "cuasync.graph.while_: "
  { 5, "opts must be a table (got number)" },
  { "unroll=4", "opts must be a table (got string)" },
  { { unrol = 4 }, "unknown field 'unrol' in opts (fields: unroll)" },
  { { unroll = 2.5 }, "opts.unroll must be an integer, the copies of the body in one round (got 2.5)" },
  { { unroll = "4" }, 'opts.unroll must be an integer, the copies of the body in one round (got "4")' },
  { { unroll = 0 }, "opts.unroll must be at least 1: the body is captured once or more (got 0)" },
  { { unroll = -3 }, "opts.unroll must be at least 1: the body is captured once or more (got -3)" },
  { { unroll = 65 }, "opts.unroll must be at most 64 (got 65): each copy is more nodes in the body graph, and 64 copies already pay the node's per-round cost once per 64 rounds" },
}
local IF_TABLE = "cuasync.graph.if_: else_fn is a table: g:if_ takes no opts (unroll is g:while_'s, a loop's body repeated; an if body runs at most once): give else_fn as a function or leave it out"

describe("g:while_ with { unroll = n } (CPU)", function()
  local fn = function() end

  it("refuses opts that are not a table, an unknown field, and an unroll not an integer in 1..64, by name", function()
    assert.equal(64, conditional.MAX_UNROLL)
    local rec = fake_rec()
    local g = conditional.new(rec)
    local c = capture.condition(rec, 1ULL, nil, "c1", 1)
    inside(rec, function()
      for _, case in ipairs(REFUSED) do
        pinned(raised(function() g:while_(c, fn, case[1]) end), WHILE .. case[2])
        pinned(raised(function() cuasync.graph.while_(c, fn, case[1]) end), WHILE .. case[2])
      end
      pinned(raised(function() g:if_(c, fn, { unroll = 2 }) end), IF_TABLE)
      pinned(raised(function() cuasync.graph.if_(c, fn, { unroll = 2 }) end), IF_TABLE)
      -- fn is checked before opts
      pinned(raised(function() g:while_(c, 5, { unroll = 0 }) end), WHILE .. "fn must be a function (got number)")
    end)
    assert.is_nil(capture.state.active)
  end)

  it("outside a capture, the module-level form names the opts it takes", function()
    pinned(raised(function() cuasync.graph.while_({}, fn, { unroll = 2 }) end),
      "cuasync.graph.while_: no capture is open: call it inside the function given to cuasync.graph(fn) or G:update(fn), where it is g:while_(c, fn[, opts])")
  end)

  -- conditional.lua loaded over a stand-in driver that records its calls: the builder's own code
  -- (its checks, the body capture, the bookkeeping) runs as it would with a GPU.
  local function recording_builder(log)
    local real = package.loaded["cuasync.native"]
    local GRAPH = ffi.cast("CUgraph", 0x1000)
    local C = {
      cuasync_graph_capture_tail = function(_, graph_out, node_out) graph_out[0] = GRAPH; node_out[0] = nil; return 0 end,
      cuasync_graph_conditional = function(_, _, kind, nbodies, bodies, node_out)
        log[#log + 1] = ("node %d %d"):format(kind, nbodies)
        for i = 0, nbodies - 1 do bodies[i] = ffi.cast("CUgraph", 0x2000 + i) end
        node_out[0] = ffi.cast("CUgraphNode", 0x3000)
        return 0
      end,
      cuasync_graph_begin_body = function(_, body) log[#log + 1] = "begin " .. tonumber(ffi.cast("uintptr_t", body)); return 0 end,
      cuasync_graph_end = function() log[#log + 1] = "end"; return 0 end,
    }
    local fake = setmetatable({ C = C, check = function(rc) assert(rc == 0, "a stand-in driver call failed") end }, { __index = real })
    package.loaded["cuasync.native"], package.loaded["cuasync.graph.conditional"] = fake, nil
    local ok, mod = pcall(require, "cuasync.graph.conditional")
    package.loaded["cuasync.native"], package.loaded["cuasync.graph.conditional"] = real, conditional
    assert(ok, mod)
    return mod, GRAPH
  end

  it("calls the body function n times, rounds 1..n, in one body capture; if bodies and no opts once", function()
    local log = {}
    local mod, GRAPH = recording_builder(log)
    local rec = fake_rec()
    local s2 = streams.stream_t(ffi.cast("CUstream", 0x5000), 1)   -- stands for the body stream
    rec.body_streams = { s2 }
    local g = mod.new(rec)
    local c = capture.condition(rec, 1ULL, GRAPH, "c1", 1)
    local function body(tag)
      return function(s, g2, round)
        log[#log + 1] = ("%s %s depth %d%s"):format(tag, tostring(round), rec.depth, s == s2 and g2 == g and "" or " (other s or g)")
        capture.enqueue("spec", "a fill", streams.handle(s), nil, false, { kind = "memset" })
        assert.equal(streams.handle(s2), capture.state.active.handle)   -- the body's capture
      end
    end
    local ok, err = pcall(inside, rec, function()
      g:while_(c, body("w"), { unroll = 3 })
      cuasync.graph.while_(c, body("m"), { unroll = 2 })   -- the module-level form, the same builder
      g:while_(c, body("once"))
      g:while_(c, body("one"), { unroll = 1 })
      g:while_(c, body("empty"), {})
      g:if_(c, body("then"), body("else"))
      -- a round that raises ends the body capture first, and the error comes back as it was
      local n = 0
      local m = raised(function() g:while_(c, function() n = n + 1; if n == 2 then error("round two", 0) end end, { unroll = 4 }) end)
      assert.equal("round two", m)
    end)
    s2.open = 0   -- not a driver stream: nothing to destroy
    if not ok then error(err, 0) end
    assert.same({
      "node 1 1", "begin 8192", "w 1 depth 1", "w 2 depth 1", "w 3 depth 1", "end",
      "node 1 1", "begin 8192", "m 1 depth 1", "m 2 depth 1", "end",
      "node 1 1", "begin 8192", "once 1 depth 1", "end",
      "node 1 1", "begin 8192", "one 1 depth 1", "end",
      "node 1 1", "begin 8192", "empty 1 depth 1", "end",
      "node 0 2", "begin 8192", "then nil depth 1", "end", "begin 8193", "else nil depth 1", "end",
      "node 1 1", "begin 8192", "end",
    }, log)
    -- the top level: the conditional nodes, each body its copies' nodes
    local want = { { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 } }
    for i, w in ipairs(want) do
      local info = rec.list[i]
      assert.equal("while", info.type)
      assert.equal(w[1], info.unroll)
      assert.equal(w[2], #info.bodies[1])
      assert.equal(0, info.depth)
      for _, node in ipairs(info.bodies[1]) do assert.equal(1, node.depth) end
    end
    assert.is_nil(rec.list[6].unroll)
    assert.equal(0, rec.depth)
    assert.is_nil(capture.state.active)
  end)
end)

-- -- GPU ---------------------------------------------------------------------------------------

describe("g:while_ with { unroll = n } (GPU)", function()
  local gpu_it = H.gpu_it(it, pending)
  local N = 32

  it("jacobi_guarded compiles beside jacobi (no GPU needed)", function()
    local ptx = cuasync.program{ file = "graph_loop.cu" }:ptx()
    assert.truthy(ptx:find(".entry jacobi_guarded(", 1, true))
    assert.truthy(ptx:find(".entry jacobi(", 1, true))
  end)

  gpu_it("the guarded Jacobi in an unrolled while body runs exactly the plain while graph's sweeps, with the same x #gpu", function()
    local m = cuasync.program{ file = "graph_loop.cu" }:compile()
    local jacobi = m:kernel("jacobi", "ptr, ptr, u32, f32, ptr, u32, cond")
    local guarded = m:kernel("jacobi_guarded", "ptr, ptr, u32, f32, ptr, u32, ptr, cond")
    local hx = cuasync.host_alloc(N * 4)
    local fx = hx:as("float")
    for i = 0, N - 1 do fx[i] = (H.random_u32() % 1000) / 1000 end
    local x, y, iters, done = cuasync.alloc(N * 4), cuasync.alloc(N * 4), cuasync.alloc(4), cuasync.alloc(4)
    local function plain(tol, cap)
      return cuasync.graph(function(s, g)
        x:upload(hx, nil, nil, s)
        iters:fill(0, nil, nil, s)
        local c = g:condition{ default = 1 }
        g:while_(c, function(s2)
          jacobi:launch({ grid = 1, block = N, stream = s2 }, x, y, N, tol, iters, cap, c)
          x:upload(y, nil, nil, s2)
        end)
      end, { name = "plain" })
    end
    local function unrolled(tol, cap, u)
      return cuasync.graph(function(s, g)
        x:upload(hx, nil, nil, s)
        iters:fill(0, nil, nil, s)
        done:fill(0, nil, nil, s)
        local c = g:condition{ default = 1 }
        local rounds = {}
        g:while_(c, function(s2, _, round)
          rounds[#rounds + 1] = round
          guarded:launch({ grid = 1, block = N, stream = s2 }, x, y, N, tol, iters, cap, done, c)
          x:upload(y, nil, nil, s2)   -- after the loop ended y is x: the copy changes nothing
        end, { unroll = u })
        assert.equal(u, #rounds)
      end, { name = "unrolled" })
    end
    local function run(G)
      x:poison(); y:poison(); done:poison()
      G:launch(); cuasync.synchronize()
      return iters:download("uint32_t", 1)[0], x:download("float", N)
    end
    local function bytes(a) return ffi.string(a, N * 4) end
    -- tol 0: every sweep to the cap, 10 sweeps in rounds of 4 (the third round's last two copies
    -- return at once); then a converging loop whose length the residual decides, in rounds of 3
    for _, case in ipairs({ { 0, 10, 4 }, { 1e-3, 5000, 3 }, { 0, 7, 1 } }) do
      local tol, cap, u = case[1], case[2], case[3]
      local want_iters, want = jacobi_reference(fx, N, tol, cap)
      local P, U = plain(tol, cap), unrolled(tol, cap, u)
      for _ = 1, 2 do   -- a replay resets the count and the flag: the same answer
        local pi, px = run(P)
        local ui, ux = run(U)
        assert.equal(want_iters, pi)
        assert.equal(want_iters, ui)
        assert.is_true(bytes(px) == bytes(ux), ("unroll %d: x differs from the plain while graph's"):format(u))
        assert(cuasync.compare(ux, want, { dtype = "f32", rtol = 0, atol = 1e-6 }))
        assert.equal(1, done:download("uint32_t", 1)[0])
      end
      P:close(); U:close()
    end
  end)
end)
