-- The module-level forms of the capture's builder (lua/cuasync/graph/conditional.lua):
-- cuasync.graph.condition{...}, cuasync.graph.while_(c, fn), cuasync.graph.if_(c, fn[, else_fn])
-- act on the capture open now, as g:condition / g:while_ / g:if_ do, and on the innermost body
-- inside one. CPU: the refusals outside a capture, and the delegation (a capture opened by hand:
-- the builder's own refusals come back under the module-level names, at the body's depth). GPU:
-- the bundled Jacobi loop (kernels-src/graph_loop.cu) built both ways gives the same graph, the
-- same sweep count and bit-identical x, as the CPU reference; a while node nested in an if body.
local ffi = require("ffi")
local cuasync = require("cuasync")
local capture = require("cuasync.capture")
local device = require("cuasync.device")
local conditional = require("cuasync.graph.conditional")
local H = require("helper")
local jacobi_reference = require("support.jacobi")

local FILE = "spec/core/graph_module_spec.lua"
local function raised(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  return tostring(e)
end

describe("cuasync.graph.while_ / if_ / condition (CPU)", function()
  it("are refused by name outside a capture, at the caller's line", function()
    assert.is_nil(capture.state.active)
    local fn = function() end
    for _, case in ipairs({
      { "while_", function() cuasync.graph.while_({}, fn) end, "g:while_(c, fn[, opts])" },
      { "if_", function() cuasync.graph.if_({}, fn, fn) end, "g:if_(c, fn[, else_fn])" },
      { "condition", function() return cuasync.graph.condition{ default = 1 } end, "g:condition{...}" },
    }) do
      local msg = raised(case[2])
      local want = ("cuasync.graph.%s: no capture is open: call it inside the function given to cuasync.graph(fn) or G:update(fn), where it is %s"):format(case[1], case[3])
      assert.truthy(msg:find("^" .. FILE .. ":%d+: " .. H.literal(want) .. "$"), msg)
    end
    -- cuasync.graph is still called as before
    local msg = raised(cuasync.graph, 5)
    assert.truthy(msg:find("cuasync.graph: fn must be a function (got number)", 1, true), msg)
  end)

  it("act through the open capture's builder, on the innermost body, and stop when it closes", function()
    local rec = { name = "g", depth = 0, list = {}, named = {}, keep = {}, count = 0 }
    local g = conditional.new(rec)
    assert.equal(g, conditional.new(rec))   -- one builder per capture: the function's g is the one used
    local c = capture.condition(rec, 1ULL, nil, "c1", 1)
    local real = device.driver_version
    capture.open(rec)
    local ok, err = pcall(function()
      device.driver_version = function() return 12020 end
      local m = raised(function() cuasync.graph.while_(c, function() end) end)
      assert.truthy(m:find("^" .. FILE .. ":%d+: cuasync%.graph%.while_: conditional nodes need a CUDA 12%.3 driver or newer %(this one is 12%.2%)"), m)
      m = raised(function() cuasync.graph.condition{ default = 1 } end)
      assert.truthy(m:find("cuasync.graph.condition: conditional nodes need a CUDA 12.3 driver or newer", 1, true), m)
      m = raised(function() cuasync.graph.condition{ default = -1 } end)   -- the builder's argument checks
      assert.truthy(m:find("cuasync.graph.condition: default", 1, true), m)
      device.driver_version = function() return 12030 end
      rec.depth = 1   -- inside a body: the nesting rule of the body's level applies
      m = raised(function() cuasync.graph.if_(c, function() end) end)
      assert.truthy(m:find("cuasync.graph.if_: conditional nodes nested in a body need a CUDA 12.4 driver or newer (this one is 12.3)", 1, true), m)
      rec.depth = 0
      device.driver_version = function() return 12060 end
      m = raised(function() cuasync.graph.if_(c, function() end, function() end) end)
      assert.truthy(m:find("cuasync.graph.if_: if/else nodes (two bodies) need a CUDA 12.8 driver or newer (this one is 12.6)", 1, true), m)
      m = raised(function() cuasync.graph.while_(5, function() end) end)
      assert.truthy(m:find("cuasync.graph.while_: c must be a condition made by g:condition{...} (got 5)", 1, true), m)
      m = raised(function() cuasync.graph.while_(c, 5) end)
      assert.truthy(m:find("cuasync.graph.while_: fn must be a function (got number)", 1, true), m)
      m = raised(function() cuasync.graph.if_(capture.condition({}, 1ULL, nil, "c9", 0), function() end) end)
      assert.truthy(m:find("cuasync.graph.if_: c is cuasync.graph condition 'c9' of graph 'graph', which belongs to another capture", 1, true), m)
    end)
    device.driver_version = real
    capture.close()
    if not ok then error(err, 0) end
    local msg = raised(function() cuasync.graph.while_(c, function() end) end)
    assert.truthy(msg:find("cuasync.graph.while_: no capture is open", 1, true), msg)
    assert.is_nil(capture.state.active)
  end)
end)

-- -- GPU ---------------------------------------------------------------------------------------

describe("cuasync.graph.while_ / if_ / condition (GPU)", function()
  local gpu_it = H.gpu_it(it, pending)
  local N, TOL, CAP = 32, 1e-3, 5000   -- 32 points from random values converge in a few hundred sweeps

  local function setup()
    local jacobi = cuasync.program{ file = "graph_loop.cu" }:compile():kernel("jacobi", "ptr, ptr, u32, f32, ptr, u32, cond")
    local hx = cuasync.host_alloc(N * 4)
    local fx = hx:as("float")
    for i = 0, N - 1 do fx[i] = (H.random_u32() % 1000) / 1000 end
    return jacobi, hx, fx, cuasync.alloc(N * 4), cuasync.alloc(N * 4), cuasync.alloc(4)
  end
  -- launch G on poisoned x and y; the sweeps and x (float[N]) it ends with
  local function run(G, x, y, iters)
    x:poison(); y:poison()
    G:launch(); cuasync.synchronize()
    return iters:download("uint32_t", 1)[0], x:download("float", N)
  end
  local function bytes(a) return ffi.string(a, N * 4) end

  gpu_it("build the same Jacobi while loop as the builder's methods: same nodes, sweeps and x, as the CPU reference", function()
    local jacobi, hx, fx, x, y, iters = setup()
    local function body(c)
      return function(s2)
        jacobi:launch({ grid = 1, block = N, stream = s2 }, x, y, N, TOL, iters, CAP, c)
        x:upload(y, nil, nil, s2)
      end
    end
    local by_builder = cuasync.graph(function(s, g)
      x:upload(hx, nil, nil, s)
      iters:fill(0, nil, nil, s)
      local c = g:condition{ default = 1 }
      g:while_(c, body(c))
    end, { name = "builder" })
    local by_module = cuasync.graph(function(s)
      x:upload(hx, nil, nil, s)
      iters:fill(0, nil, nil, s)
      local c = cuasync.graph.condition{ default = 1 }
      cuasync.graph.while_(c, body(c))
    end, { name = "module" })
    for _, kind in ipairs({ "count", "kernel", "memcpy", "memset", "conditional" }) do
      assert.equal(by_builder.nodes[kind], by_module.nodes[kind], kind)
    end
    assert.equal(1, by_module.nodes.conditional)
    assert.equal(by_builder.edges.count, by_module.edges.count)
    local want_iters, want = jacobi_reference(fx, N, TOL, CAP)
    assert.is_true(want_iters > 10 and want_iters < CAP, "the reference converges in a handful of sweeps")
    local bi, bx = run(by_builder, x, y, iters)
    local mi, mx = run(by_module, x, y, iters)
    assert.equal(want_iters, bi)
    assert.equal(want_iters, mi)
    assert.is_true(bytes(bx) == bytes(mx), "the two graphs end with different x")
    assert(cuasync.compare(mx, want, { dtype = "f32", rtol = 0, atol = 1e-6 }))
    by_builder:close(); by_module:close()
  end)

  gpu_it("inside a body act on that body: a while node nested in an if node's body (CUDA 12.4)", function()
    local jacobi, hx, fx, x, y, iters = setup()
    local function graph_with(go)
      return cuasync.graph(function(s)
        x:upload(hx, nil, nil, s)
        iters:fill(0, nil, nil, s)
        local run_it = cuasync.graph.condition{ default = go }
        cuasync.graph.if_(run_it, function()
          local c = cuasync.graph.condition{ default = 1 }   -- made in the if body, the while node's level
          cuasync.graph.while_(c, function(s3)
            jacobi:launch({ grid = 1, block = N, stream = s3 }, x, y, N, TOL, iters, CAP, c)
            x:upload(y, nil, nil, s3)
          end)
        end)
      end, { name = "nested" })
    end
    local G = graph_with(1)
    assert.equal(1, G.nodes.conditional)   -- the top level holds the if node; the while node is in its body
    local want_iters, want = jacobi_reference(fx, N, TOL, CAP)
    local gi, gx = run(G, x, y, iters)
    assert.equal(want_iters, gi)
    assert(cuasync.compare(gx, want, { dtype = "f32", rtol = 0, atol = 1e-6 }))
    -- the same graph with the if's condition 0: the loop is skipped, x is the upload
    local skip = graph_with(0)
    local si, sx = run(skip, x, y, iters)
    assert.equal(0, si)
    assert.is_true(bytes(sx) == bytes(fx), "x is not the uploaded data")
    -- a condition of the top level does not drive a node inside the body
    local msg = raised(function()
      cuasync.graph(function()
        local c = cuasync.graph.condition{ default = 0 }
        cuasync.graph.while_(c, function() cuasync.graph.if_(c, function() end) end)
      end)
    end)
    assert.truthy(msg:find("cuasync.graph.if_: c is cuasync.graph condition 'c1' of graph 'graph', made in another graph level", 1, true), msg)
    assert.is_nil(capture.state.active)
    G:close(); skip:close()
  end)
end)
