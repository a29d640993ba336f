-- Bad input in the layers after the core: one pin per defect of the bad-input issue (the
-- store's are in store_faults_spec.lua, the command's in command_spec.lua, merge's refusals in
-- slurm_spec.lua and here). Host sweeps and the CPU model only: CI runs every line.
local ffi = require("ffi")
local cuasync = require("cuasync")
local sweep = require("cuasync.tools.sweep")
local json = require("cuasync.tools.json")
local H = require("helper")
local NOLIB = H.missing("libcuda.so.1")   -- a driver that is not there

local function nop() end

-- A plan's refusal is an error object of kind "plan" (cuasync.errors): its text without the
-- position, which busted's has_error strips from a string but not from an object's tostring.
local function refused(fn)
  local ok, err = pcall(fn)
  assert.is_false(ok)
  assert.equal("plan", cuasync.errors.kind(err), tostring(err))
  return cuasync.errors.message(err)
end

-- A one-round host sweep over `params` with `build`; returns its rows.
local function rows_of(params, build, extra)
  local spec = { name = "bad_input", host = true, rounds = 2, reps = 2, params = params, build = build }
  for k, v in pairs(extra or {}) do spec[k] = v end
  local S = sweep(spec)
  S:run{ quiet = true, force = true, jobs = 1 }
  return S.rows, S
end

describe("bad input", function()
  local old
  before_each(function() old = os.getenv("CUASYNC_CACHE_DIR") end)

  it("1: a parameter named n (2^30 included) round-trips through JSON and the store", function()
    local dir = H.tmpdir()
    local ok, out = H.luajit([[
      local sweep = require("cuasync.tools.sweep")
      local function S() return sweep{ name = "n", host = true, rounds = 1, reps = 1, params = { n = { 2 ^ 30, 3 } },
        build = function(p) return { run = function() end, bytes = 8 } end } end
      local a = S():run{ quiet = true }
      local path = a:write("json", os.getenv("CUASYNC_CACHE_DIR") .. "/n.json")
      local m = sweep.merge({ path })
      local b = S():run{ quiet = true }
      print("ROWS", m.rows[1].params.n, m.rows[2].params.n, b.rows[1].cached, b.rows[1].params.n)
    ]], { CUASYNC_CACHE_DIR = dir, CUASYNC_CUDA_LIB = NOLIB }, 60)
    assert.is_true(ok, out)
    assert.truthy(out:find("ROWS\t1073741824\t3\ttrue\t1073741824", 1, true), out)
    assert.equal('{"n":1073741824}', json.encode({ n = 2 ^ 30 }))
  end)

  it("2: only true verifies; false and a reason, a string, nil or any other value fail the row, saying why", function()
    local results = { true, false, "element 3 is 7", nil, 1, {} }
    local rows = rows_of({ k = { 1, 2, 3, 4, 5, 6 } }, function(p)
      return { run = nop, bytes = 8, verify = function() return results[p.k], p.k == 2 and "off by one" or nil end }
    end)
    assert.equal("measured", rows[1].kind)
    assert.is_true(rows[1].verified)
    assert.equal("verification: off by one", rows[2].reason)
    assert.equal("verification: element 3 is 7", rows[3].reason)
    assert.equal("verification: verify returned nil: only true passes (return true, or false and the reason)", rows[4].reason)
    assert.equal("verification: verify returned 1: only true passes (return true, or false and the reason)", rows[5].reason)
    assert.equal("verification: verify returned an empty table: only true passes (return true, or false and the reason)", rows[6].reason)
    -- the library's own pattern verify speaks the same convention
    local p = cuasync.patterns.kernel("pipe_single", {})
    local inp, out = ffi.new("uint32_t[4]", 1, 2, 3, 4), ffi.new("uint32_t[4]", 2, 3, 4, 5)
    assert.is_true((p:verify(inp, out, 4)))
    out[2] = 9
    local ok, why = p:verify(inp, out, 4)
    assert.is_false(ok)
    assert.truthy(why:find("element 2 is 9", 1, true), why)
  end)

  it("3: a variant that raises in the timed rounds fails alone; the others are measured", function()
    local rows = rows_of({ k = { 1, 2, 3 } }, function(p)
      local calls = 0
      return { run = function() calls = calls + 1 if p.k == 2 and calls > 1 then error("boom in round 1") end end, bytes = 8 }
    end)
    assert.equal("measured", rows[1].kind)
    assert.equal("failed", rows[2].kind)
    assert.equal("timing: boom in round 1", rows[2].reason)
    assert.equal("measured", rows[3].kind)
  end)

  it("4: load names that would break the generated header are refused by name", function()
    local tm = cuasync.tensormap{ ptr = 256, bytes = 2 ^ 30, encode = false, dtype = "f32", dims = { 4096, 4096 }, box = { 64, 32 } }
    local function plan(name, load)
      return cuasync.pipeline{ name = name, stages = 2, loads = { { map = tm, name = load } }, producer = { warps = 1 }, consumer = { warps = 1 } }
    end
    local header = require("cuasync.model.pipeline_header")
    for member in pairs(header.MEMBERS) do
      assert.equal(('cuasync.pipeline: loads[1].name "%s" is a member the generated Config already has; name the load something else'):format(member),
        refused(function() plan("tma", member) end))
    end
    -- the list is the header's: every member it declares is in it
    local text = plan("tma", "A"):header()
    for m in text:gmatch("static constexpr [%w ]- ([%w_]+)[%[ =]") do
      assert.truthy(header.MEMBERS[m] or m == "A", m)
    end
    for m in text:gmatch(", ([%w_]+) = %d+u") do assert.truthy(header.MEMBERS[m], m) end
    assert.equal('cuasync.pipeline: loads[1].name "int" is a C++ keyword; name the load something else', refused(function() plan("tma", "int") end))
    assert.equal('cuasync.pipeline: loads[1].name "class" is a C++ keyword; name the load something else', refused(function() plan("tma", "class") end))
    assert.equal('cuasync.pipeline: loads[1].name "tma" is the pipeline\'s own name (the generated struct\'s); name the load something else',
      refused(function() plan("tma", "tma") end))
    assert.error_matches(function() plan("tma", "__x") end, "is reserved to the compiler")
    assert.error_matches(function() plan("int", "A") end, 'name "int" is a C%+%+ keyword: it names the generated C%+%+ struct')
    assert.error_matches(function() cuasync.pipeline{ name = "bulk", stages = 2, stage_bytes = 1024, producer = { warps = 1 }, consumer = { warps = 1 } } end,
      'name "bulk" is also the name loads%[1%] takes by default')
  end)

  it("5: P:simulate's defaults finish quickly on a legal plan of 64 stages and 992 consumer threads", function()
    local P = cuasync.pipeline{ stages = 64, stage_bytes = 1024, producer = { warps = 1 }, consumer = { threads = 992 } }
    local t0 = os.clock()
    local r = P:simulate()
    assert.is_true(r.ok, tostring(r))
    assert.truthy(os.clock() - t0 < 10, ("%.1f s"):format(os.clock() - t0))
    -- a per-thread release still counts every thread: one arrival short deadlocks
    local short = P:mutate{ consumer_arrivals = 991 }:simulate()
    assert.is_false(short.ok)
    assert.equal("deadlock", short.kind)
    assert.error_matches(function() P:simulate{ runs = 1000 } end,
      "iterations x runs x roles = 129 x 1000 x 32 exceeds 250000 simulated iterations per call")
  end)

  it("an exhaustive run stopped at its bound is incomplete, not ok", function()
    local P = cuasync.pipeline{ stages = 2, stage_bytes = 1024, producer = { warps = 1 }, consumer = { threads = 2 } }
    local r = P:simulate{ iterations = 5, explore = "exhaustive", bound = 50 }
    assert.is_false(r.complete)
    assert.truthy(tostring(r):find("^incomplete: 50 runs %(exhaustive, bound reached before every interleaving%)"), tostring(r))
    local all = P:simulate{ iterations = 2, explore = "exhaustive", bound = 60000 }
    assert.is_true(all.complete)
    assert.truthy(tostring(all):find("^ok: "), tostring(all))
  end)

  it("9: the sweep's fields are checked: a non-program, baseline figures, NaN or inf work, unknown build keys, order twice, odd values", function()
    local rows = rows_of({ k = { 1, 2, 3, 4, 5 } }, function(p)
      if p.k == 1 then return { run = nop, bytes = 0 / 0 } end
      if p.k == 2 then return { run = nop, flops = 1 / 0 } end
      if p.k == 3 then return { run = nop, verfy = function() return true end } end
      if p.k == 5 then return { run = nop, bytes = 8, stage_inflight = -4096 } end
      return { run = nop, bytes = 8, inflight = 32768, stage_inflight = 8192 }
    end)
    assert.equal("build(p).bytes must be a finite non-negative number (got nan)", rows[1].reason)
    assert.equal("build(p).flops must be a finite non-negative number (got inf)", rows[2].reason)
    assert.truthy(rows[3].reason:find('^build%(p%) returned an unknown field "verfy" %(fields: bytes, '), rows[3].reason)
    assert.equal("measured", rows[4].kind)
    assert.equal(8192, rows[4].stage_inflight)
    assert.equal("build(p).stage_inflight must be a finite non-negative number (got -4096)", rows[5].reason)
    local prog = rows_of({ k = { 1 } }, function() return { run = nop } end, { program = function() return {} end })
    assert.equal("program: program(p) must return a cuasync.program (got an empty table)", prog[1].reason)
    local function bad(spec, msg)
      local s = { name = "x", host = true, params = { a = { 1 } }, build = function() return { run = nop } end }
      for k, v in pairs(spec) do s[k] = v end
      assert.has_error(function() sweep(s) end, "cuasync.sweep: " .. msg)
    end
    bad({ baseline = { name = "b", run = nop, bytes = "x" } }, 'baseline.bytes must be a finite positive number (got "x")')
    bad({ baseline = { name = "b", run = nop, bytes = 0 / 0 } }, "baseline.bytes must be a finite positive number (got nan)")
    bad({ params = { x = { 1, 2 }, y = { 1 } }, order = { "x", "y", "x" } }, 'order names "x" twice (order[1] and order[3])')
    bad({ params = { a = { 0 / 0 } } }, "params.a[1] is nan: a parameter value must be finite (it names the point in files)")
    bad({ seed = -1 }, "seed must be an integer in 0..2147483648 (got -1)")
    local S = sweep{ name = "x", host = true, params = { a = { 1 } }, build = function() return { run = nop } end }
    assert.has_error(function() S:set_param("a", { {} }) end, "cuasync.sweep: params.a[1] must be a number, string or boolean (got table)")
    assert.has_error(function() S:run{ force = "yes" } end, 'cuasync.sweep.run: force must be true or false (got "yes")')
  end)

  it("10: model.run refuses a phase that is not an integer and a barrier not made by the run, as faults", function()
    local mb = cuasync.model.mbarrier(1)
    for _, case in ipairs({
      { function(t) t:arrive(t.bar.b, 1, "x") end, "x: arrive's phase must be an integer (got \"x\")" },
      { function(t) t:arrive(t.bar.b) t:wait_parity(t.bar.b, 0, {}) end, "x: wait_parity's phase must be an integer (got an empty table)" },
      { function(t) t:arrive(mb) end, "x: arrive's barrier mbarrier was not made by this run: use t.bar.NAME" },
    }) do
      local r = cuasync.model.run{ barriers = { b = 1 }, roles = { x = case[1] }, runs = 2 }
      assert.is_false(r.ok)
      assert.equal("error", r.kind)
      assert.truthy(r.message:find(case[2], 1, true), r.message)
    end
  end)

  it("13: a NULL cdata is never taken as not given", function()
    local NULL = ffi.cast("void *", 0)
    assert.has_error(function() cuasync.program{ source = "x", watchdog = NULL } end,
      "cuasync.program: watchdog is a NULL pointer (a NULL cdata reads as nil: give a value, or leave the field out)")
    assert.error_matches(function() cuasync.device(NULL) end, "cuasync.device: ordinal must be a non%-negative integer %(got cdata<void %*>: NULL%)")
    assert.error_matches(function() sweep.best("x", NULL) end, "cuasync.sweep.best: opts must be a table %(got cdata%)")
  end)

  it("14: a method called with a dot says to call it with a colon", function()
    local p = cuasync.program{ source = 'extern "C" __global__ void k() {}' }
    local P = cuasync.pipeline{ stages = 2, stage_bytes = 1024, producer = { warps = 1 }, consumer = { warps = 1 } }
    local S = sweep{ name = "x", host = true, params = { a = { 1 } }, build = function() return { run = nop } end }
    local mb = cuasync.model.mbarrier(1)
    assert.error_matches(function() p.compile() end, "cuasync.program.compile: call it as prog:compile%(...%), with a colon %(self was nil%)")
    assert.error_matches(function() P.explain() end, "cuasync.pipeline.explain: call it as P:explain%(...%), with a colon")
    assert.error_matches(function() mb.arrive() end, "cuasync.model.mbarrier.arrive: call it as mb:arrive%(...%), with a colon")
    assert.error_matches(function() S.run({ quiet = true }) end, "cuasync.sweep.run: call it as S:run%(...%), with a colon %(self was a table with quiet%)")
  end)

  it("15: patterns:verify names a pointer it cannot read (void *)", function()
    local p = cuasync.patterns.kernel("pipe_single", {})
    local b = ffi.new("uint32_t[4]")
    assert.has_error(function() p:verify(ffi.cast("void *", b), b, 4) end,
      'cuasync.patterns: verify: inp must point to uint32_t, int32_t or float elements (got ctype<void *>): cast it, e.g. ffi.cast("uint32_t *", p)')
  end)

  it("16: messages name what the user gave: bank_conflicts' cells, derived strides, a NaN limit; scratch counts in 'at most'", function()
    local L = cuasync.swizzle.layout("128B", { 64, 8 }, 2)
    assert.has_error(function() L:bank_conflicts({ { 100, 100 } }) end,
      "cuasync.swizzle.bank_conflicts: cells[1][1] (col) must be an integer in 0..63, the box's columns (got 100)")
    assert.error_matches(function() cuasync.tensormap{ ptr = 256, bytes = 2 ^ 20, encode = false, dtype = "f32", dims = { 5, 32 }, box = { 4, 4 } } end,
      "dims%[1%] = 5 makes rows of 20 bytes, and the packed strides derived from dims %(none were given%) must be multiples of 16 bytes")
    local P = cuasync.pipeline{ stages = 2, stage_bytes = 1024, producer = { warps = 1 }, consumer = { warps = 1 } }
    assert.equal("cuasync.pipeline: check's device.smem_optin must be a non-negative integer (got nan)", refused(function() P:check{ smem_optin = 0 / 0 } end))
    local S7 = cuasync.pipeline{ stages = 7, stage_bytes = 32768, scratch = 4096, producer = { warps = 1 }, consumer = { warps = 1 } }
    local ok, err = pcall(S7.check, S7, { smem_optin = 232448 })
    assert.is_false(ok)
    local fit = tonumber(tostring(err):match("so at most (%d+) stages fit"))
    assert.truthy(fit and fit < 7, tostring(err))
    local S6 = cuasync.pipeline{ stages = fit, stage_bytes = 32768, scratch = 4096, producer = { warps = 1 }, consumer = { warps = 1 } }
    assert.equal(S6, S6:check{ smem_optin = 232448 })
  end)

  it("18: the specs' scratch directories go when the spec process ends", function()
    local ok, out = H.luajit([[
      package.path = "spec/?.lua;" .. package.path
      local H = require("helper")
      local a, b = H.tmpdir(), H.tmpdir()
      io.open(b .. "/f", "w"):write("x")
      print("DIRS", a, b)
      os.exit(0, true)   -- as busted ends
    ]], { CUASYNC_CUDA_LIB = NOLIB, CUASYNC_REQUIRE_GPU = "0" }, 60)
    assert.is_true(ok, out)
    local a, b = out:match("DIRS\t(%S+)\t(%S+)")
    assert.truthy(a and b, out)
    assert.equal(a:match("^(.*)/"), b:match("^(.*)/"))   -- one root per process
    assert.is_nil(io.open(b .. "/f"))
    local _, rc = H.sh("test -e " .. a:match("^(.*)/"))
    assert.equal(1, rc)
  end)

  it("6: merge refuses JSON that is not a sweep's, naming what is missing", function()
    local dir = H.tmpdir()
    for _, case in ipairs({ { '{"rows":[]}', "no sweep name" }, { '{"name":"x","order":["a"],"rows":[1]}', "rows[1] has no index or params" },
                            { '{"name":"x","version":"1.0.0","dependencies":{}}', "no order: the list of its parameters" },
                            { '{"name":"x","order":["a"],"rows":[{"index":1,"params":{"a":1},"kind":"bogus"}]}', 'rows[1].kind is "bogus"' },
                            { '{"name":"x","order":["a"],"rows":[{"index":1,"params":{"b":1},"kind":"measured"}]}', "rows[1].params has no a" } }) do
      local f = assert(io.open(dir .. "/m.json", "w"))
      f:write(case[1])
      f:close()
      local ok, err = pcall(sweep.merge, { dir .. "/m.json" })
      assert.is_false(ok)
      assert.truthy(tostring(err):find("cuasync.sweep.merge: " .. ('"%s/m.json"'):format(dir) .. " is not a sweep's JSON (" .. case[2], 1, true), tostring(err))
    end
  end)
end)
