-- Bad input in the core, one pin per defect of issue 41 (its defect 2, the PCH directory, is in
-- spec/core/pch_spec.lua) and the docs text of issue 42: each call refused by name, with the
-- argument and the rule, at the user's line (spec/house/positions_spec.lua pins the positions).
-- CPU only: a capture is opened by hand where a graph would need a GPU.
local ffi = require("ffi")
local cuasync = require("cuasync")
local capture = require("cuasync.capture")
local H = require("helper")
local NOLIB = H.missing("libcuda.so.1")   -- a driver that is not there
local NULL = ffi.cast("void *", 0)
local FILE = "spec/house/bad_input_core_spec.lua"

-- The raw message of a failing call (an error object's tostring carries its position too).
local function raised(fn, ...)
  local ok, err = pcall(fn, ...)
  assert.is_false(ok, "expected an error")
  return tostring(err)
end

local function plan()
  return cuasync.pipeline{ name = "nullwd", stages = 2, stage_bytes = 1024, producer = { warps = 1 }, consumer = { warps = 1 } }
end

describe("bad input in the core (issue 41)", function()
  it("defect 11: P:program{ watchdog = NULL } is refused by name, not read as the default", function()
    local P = plan()
    local msg = raised(function() return P:program{ source = 'extern "C" __global__ void k() {}', watchdog = NULL } end)
    assert.truthy(msg:find("^" .. FILE .. ":%d+: cuasync%.pipeline%.program: watchdog is a NULL pointer %(a NULL cdata reads as nil: give a value, or leave the field out%)$"), msg)
    -- any other field given as NULL: the same, by its name
    msg = raised(function() return P:program{ source = 'extern "C" __global__ void k() {}', defines = NULL } end)
    assert.truthy(msg:find("cuasync.pipeline.program: defines is a NULL pointer", 1, true), msg)
    -- cuasync.program refused it already
    msg = raised(cuasync.program, { source = "", watchdog = NULL })
    assert.truthy(msg:find("cuasync.program: watchdog is a NULL pointer", 1, true), msg)
  end)

  it("defect 11: cuasync.graph(fn, NULL) names the call and the argument", function()
    local msg = raised(cuasync.graph, function() end, NULL)
    assert.truthy(msg:find("^" .. FILE .. ":%d+: cuasync%.graph: opts is a NULL pointer %(a NULL cdata reads as nil: give a table, or leave it out%)$"), msg)
    msg = raised(cuasync.graph, function() end, { name = NULL })
    assert.truthy(msg:find("cuasync.graph: name is a NULL pointer", 1, true), msg)
  end)

  it("defect 11: cuasync.bench_rounds inside a capture names cuasync.bench_rounds, keep_going or not", function()
    capture.open({ handle = NULL, count = 0, keep = {}, kernels = {} })
    local ok1, e1 = pcall(cuasync.bench_rounds, { { run = function() end } }, { rounds = 1 })
    local v = { run = function() end }
    local ok2, e2 = pcall(cuasync.bench_rounds, { v }, { rounds = 1, keep_going = true })
    capture.close()
    assert.is_false(ok1)
    assert.truthy(tostring(e1):find("^" .. FILE .. ":%d+: cuasync%.bench_rounds: cannot run inside cuasync%.graph's function: "), tostring(e1))
    assert.is_false(ok2)
    assert.truthy(tostring(e2):find("cuasync.bench_rounds: cannot run inside", 1, true), tostring(e2))
    assert.is_nil(v.error)
    -- host rounds time no device work: allowed inside a capture, as cuasync.bench{ host = true } is
    capture.open({ handle = NULL, count = 0, keep = {}, kernels = {} })
    local ok3, e3 = pcall(cuasync.bench_rounds, { { run = function() end } }, { rounds = 1, reps = 1, host = true })
    capture.close()
    assert.is_true(ok3, tostring(e3))
  end)

  it("defect 11: cuasync.probe.memory() (and bench_rounds) with no driver names the call; a NULL dev or opts is refused by name", function()
    local ok, out = H.luajit([[
      local cuasync = require("cuasync")
      local ffi = require("ffi")
      local _, e = pcall(cuasync.probe.memory)
      print("NODEV " .. tostring(e))
      _, e = pcall(cuasync.probe.memory, ffi.cast("void *", 0))
      print("NULLDEV " .. tostring(e))
      _, e = pcall(cuasync.probe.memory, nil, ffi.cast("void *", 0))
      print("NULLOPTS " .. tostring(e))
      -- the other names loaded on first use, the same way
      _, e = pcall(cuasync.bench_rounds, { { run = function() end } }, { rounds = 1 })
      print("ROUNDS " .. tostring(e))
    ]], { CUASYNC_CUDA_LIB = NOLIB })
    assert.is_true(ok, out)
    assert.truthy(out:find("NODEV [^\n]*:%d+: cuasync%.probe%.memory: no CUDA driver: " .. H.literal(NOLIB) .. " not found"), out)
    assert.truthy(out:find("NULLDEV [^\n]*:%d+: cuasync%.probe%.memory: dev is a NULL pointer"), out)
    assert.truthy(out:find("NULLOPTS [^\n]*:%d+: cuasync%.probe%.memory: opts is a NULL pointer"), out)
    assert.truthy(out:find("ROUNDS [^\n]*:%d+: cuasync%.bench_rounds: no CUDA driver: "), out)
  end)

  it("defect 11: cuasync.check_launch checks each rule whose attribute is given, and refuses a bad attribute by name", function()
    local cfg = { grid = 2, block = 32 }
    -- attrs with only binary_version: the rules on the other attributes are not checked
    assert.same({ 2, 1, 1 }, cuasync.check_launch(cfg, nil, { binary_version = 90 }, "k").grid)
    assert.same({ 2, 1, 1 }, cuasync.check_launch({ grid = 2, block = 32, cluster = 2 }, nil, { binary_version = 90 }, "k").cluster)
    local msg = raised(cuasync.check_launch, { grid = 2, block = 32, cluster = 2 }, nil, { binary_version = 80 }, "k")
    assert.truthy(msg:find("kernel 'k' is built for sm_80, which has no thread-block clusters", 1, true), msg)
    msg = raised(cuasync.check_launch, cfg, nil, { max_threads = 16 }, "k")
    assert.truthy(msg:find("block {32, 1, 1} has 32 threads but kernel 'k' can run at most 16 per block", 1, true), msg)
    -- a bad attribute: named, at the user's line, never a raw compare
    msg = raised(cuasync.check_launch, cfg, nil, { max_threads = "many" }, "k")
    assert.truthy(msg:find("^" .. FILE .. ":%d+: cuasync%.launch: attrs%.max_threads must be a non%-negative integer %(got \"many\"%)$"), msg)
    msg = raised(cuasync.check_launch, cfg, nil, 5, "k")
    assert.truthy(msg:find("^" .. FILE .. ":%d+: cuasync%.launch: attrs must be a kernel's :attributes%(%) table %(got number%)$"), msg)
    msg = raised(cuasync.check_launch, cfg, nil, { required_cluster = { 2 } }, "k")
    assert.truthy(msg:find("cuasync.launch: attrs.required_cluster must be a list of 3 non-negative integers", 1, true), msg)
    msg = raised(cuasync.check_launch, cfg, nil, NULL, "k")
    assert.truthy(msg:find("cuasync.launch: attrs is a NULL pointer", 1, true), msg)
  end)

  it("defect 11: docs/reference.md lists the launch fields the code takes; pdl is refused naming programmatic", function()
    local ref = assert(H.read("docs/reference.md"))
    local list = ref:match("`k:launch%(cfg, %.%.%.%)`.-`cfg` is `{ ([^}]+) }`")
    assert.truthy(list, "k:launch's cfg list in docs/reference.md")
    for name in list:gmatch("[%w_]+") do
      local cfg = { grid = 1, block = 32 }
      if cfg[name] == nil then cfg[name] = false end
      local ok, err = pcall(cuasync.check_launch, cfg)
      assert.falsy(not ok and tostring(err):find("unknown field", 1, true), name .. ": " .. tostring(err))
    end
    assert.falsy(list:find("%f[%w]pdl%f[^%w_]"), list)
    local msg = raised(cuasync.check_launch, { grid = 1, block = 32, pdl = true })
    assert.truthy(msg:find("^" .. FILE .. ":%d+: cuasync%.launch: unknown field 'pdl' %(programmatic dependent launch is programmatic = true; fields: "), msg)
  end)
end)

describe("docs/reference.md (issue 42)", function()
  it("writes model.run's barriers by field name, as model.run reads them", function()
    local ref = assert(H.read("docs/reference.md"))
    local line = ref:match("`cuasync%.model%.run{ barriers = ([^\n]*)")
    assert.truthy(line, "model.run in docs/reference.md")
    assert.truthy(line:find("{ count = c, n = n }", 1, true), line)
    assert.falsy(line:find("{ count, n }", 1, true), line)
    local c, n = 1, 2
    local r = cuasync.model.run{ barriers = { full = { count = c, n = n } }, roles = { a = function(t) t:note("x") end }, runs = 1 }
    assert.is_true(r.ok, tostring(r))
  end)
end)
