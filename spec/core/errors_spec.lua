-- cuasync.errors: the one home of the error kinds. Each kind from where it is raised (a real
-- NVRTC failure for "compile", the plan's refusals for "plan", the post-mortem of a written
-- record for "hang"), errors.kind and errors.message on anything else, the text a user sees
-- unchanged (position included), and the objects intact through pcall, coroutines and rethrows.
-- CPU only: NVRTC runs without a GPU.
local ffi = require("ffi")
local cuasync = require("cuasync")
local errors = require("cuasync.errors")
local native = require("cuasync.native")
local watchdog = require("cuasync.watchdog")
local hang = require("cuasync.hang")
local cancel = require("cuasync.cancel")
local runner = require("cuasync.tools.sweep.measure")
local H = require("helper")

-- The error fn raises, and the line of this file it was called from (fn's own first line).
local function caught(fn)
  local ok, err = pcall(fn)
  assert.is_false(ok, "no error")
  return err, debug.getinfo(fn, "S").linedefined
end

local function plan_map(box)
  return cuasync.tensormap{ ptr = 2 ^ 20, bytes = 2 ^ 30, encode = false, dtype = "f32", dims = { 4096, 4096 }, box = box }
end

local BAD = "extern \"C\" __global__ void k(int *p)\n{\n    p[0] = undeclared;\n}\n"

describe("cuasync.errors", function()
  it("is the module's errors, one kind per object class", function()
    assert.equal(errors, cuasync.errors)
    assert.same({ "compile", "plan", "driver", "hang", "cancelled", "timeout" }, errors.KINDS)
    for _, k in ipairs(errors.KINDS) do
      local e = errors.new(k, { message = "m" })
      assert.equal(k, errors.kind(e))
      assert.equal(k, e.kind)
      assert.equal("m", tostring(e))
    end
    assert.has_error(function() errors.new("nope", { message = "m" }) end)
  end)

  it("kind: nil for strings, numbers, nil and tables cuasync did not make, whatever their kind field", function()
    assert.is_nil(errors.kind("cuasync.pipeline: stages must be ..."))
    assert.is_nil(errors.kind(nil))
    assert.is_nil(errors.kind(42))
    assert.is_nil(errors.kind({ kind = "plan", message = "x" }))
    assert.is_nil(errors.kind(setmetatable({ kind = "hang" }, { __tostring = function() return "x" end })))
    -- the CPU model's protocol fault has a kind of its own, not one of these
    local r = cuasync.model.run{ barriers = { b = 1 }, roles = { a = function(t) t:wait_parity(t.bar.b, 0) end } }
    assert.equal("deadlock", r.kind)
    assert.is_nil(errors.kind(r))
  end)

  it("message: the text without the position, for strings (as the sweep's runner.message) and objects", function()
    for _, s in ipairs({ "spec/x.lua:12: cuasync.tensormap: box[1] must be ...", "no position here",
                         "a.lua:1: b.lua:2: twice", "first\nx.lua:3: second line" }) do
      assert.equal(runner.message(s), errors.message(s))
    end
    assert.equal("cuasync.tensormap: box[1] must be ...", errors.message("spec/x.lua:12: cuasync.tensormap: box[1] must be ..."))
    local e = errors.new("plan", { message = "cuasync.pipeline: m", position = "spec/y.lua:7: " })
    assert.equal("spec/y.lua:7: cuasync.pipeline: m", tostring(e))
    assert.equal("cuasync.pipeline: m", errors.message(e))
    assert.equal(runner.message(e), errors.message(e))
  end)

  it("driver, hang and cancelled: the existing predicates are the kinds' (and stay where they were)", function()
    local d = native.driver_error("cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (out of memory) while allocating", 2)
    assert.equal("driver", errors.kind(d))
    assert.is_true(native.is_driver_error(d) and cuasync.is_driver_error(d) and errors.is_driver_error(d))
    assert.equal(2, d.status)
    assert.equal("string", type(d.code))   -- the driver's name for it, where a driver names it
    assert.equal("cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (out of memory) while allocating", tostring(d))
    assert.truthy(d:find("OUT_OF_MEMORY", 1, true))
    assert.equal(errors.DriverError, native.DriverError)

    local c = cancel.error("synchronize", "interrupt", 12, 300, { { labels = { "'k'" } } })
    assert.equal("cancelled", errors.kind(c))
    assert.is_true(cancel.is_cancelled(c) and cuasync.is_cancelled(c) and errors.is_cancelled(c))
    assert.equal("cuasync.synchronize: cancelled after 12 ms (Ctrl-C): the watchdog's abort word was raised from the host and kernel 'k' left its watched waits; the GPU is free for the next launch",
                 tostring(c))

    local r = ffi.new("cuasync_watchdog_record")
    r.state, r.block[0], r.warp, r.parity, r.phase_parity = 1, 3, 2, 0xFFFFFFFF, 2
    r.received, r.armed, r.waited_ns, r.timeout_ns = 0xFFFFFFFF, 0xFFFFFFFF, 500e6, 500e6
    local h = hang.error_from(r, { name = "x.cu", watch = { last = "k" }, program = {} }, true)
    assert.equal("hang", errors.kind(h))
    assert.is_true(watchdog.is_hang(h) and cuasync.is_hang(h) and errors.is_hang(h))
    assert.equal(watchdog.error_from, hang.error_from)
    assert.equal("cuasync.watchdog: kernel 'k' hung: block (3,0,0) warp 2 waited 500 ms on a bounded wait", tostring(h))
    assert.truthy(h:explain():find("likely cause: no single cause stands out", 1, true))
    -- none is another's kind
    for _, e in ipairs({ d, c, h }) do
      local n = 0
      for _, p in ipairs({ errors.is_driver_error, errors.is_hang, errors.is_cancelled }) do if p(e) then n = n + 1 end end
      assert.equal(1, n)
    end
  end)

  it("compile: NVRTC's failure as an object with name, arch, log, source, options, lines; the same text as before", function()
    local prog = cuasync.program{ source = BAD, name = "bad.cu", arch = "sm_90a" }
    local err, line = caught(function() prog:compile() end)
    assert.equal("compile", errors.kind(err))
    assert.same({ "bad.cu", "sm_90a", BAD }, { err.name, err.arch, err.source })
    assert.truthy(err.log:find('bad.cu(3): error: identifier "undeclared" is undefined', 1, true), err.log)
    assert.truthy(err.options[1] == "-arch=sm_90a" and err.options[2] == "-std=c++17", table.concat(err.options, " "))
    assert.same({ 3 }, err.failing)
    assert.same({ '     1 | extern "C" __global__ void k(int *p)', "     2 | {", ">    3 |     p[0] = undeclared;",
                  "     4 | }" }, err.lines)
    -- the text users saw when it was a string: position, call, the log, the failing lines numbered
    local head = "cuasync.program: bad.cu failed to compile for sm_90a (nvrtcCompileProgram: NVRTC_ERROR_COMPILATION"
    assert.equal(head, err.message:sub(1, #head))
    assert.equal(("spec/core/errors_spec.lua:%d: "):format(line), err.position)
    assert.equal(err.position .. err.message, tostring(err))
    assert.truthy(err.message:find("\n     2 | {\n>    3 |     p[0] = undeclared;\n     4 | }\n", 1, true), err.message)
    assert.truthy(err.message:find(err.log, 1, true))
    assert.equal(err.message, errors.message(err))
    assert.truthy(err:find("failed to compile", 1, true))   -- string methods, on the text
    -- the sweep's compile path rethrows it with error(err, 0): still the object
    local again = caught(function() runner.compile_one(prog, "sm_90a") end)
    assert.equal("compile", errors.kind(again))
    assert.is_false(runner.prunes(again))
  end)

  it("plan: a pipeline plan's refusals, wherever raised, have kind plan and the text they always had", function()
    local err, line = caught(function() cuasync.pipeline{ stages = 0, stage_bytes = 1024, producer = { warps = 1 }, consumer = { warps = 1 } } end)
    assert.equal("plan", errors.kind(err))
    assert.equal(("spec/core/errors_spec.lua:%d: cuasync.pipeline: stages must be an integer in 1..64 (got 0)"):format(line), tostring(err))
    assert.equal("cuasync.pipeline: stages must be an integer in 1..64 (got 0)", err.message)
    -- the string the refusal was before, raised at the same line, reads the same
    local function as_string(msg) error(msg, 2) end
    local _, obj = pcall(function() cuasync.pipeline{ stages = 0, stage_bytes = 1024, producer = { warps = 1 }, consumer = { warps = 1 } } end); local _, str = pcall(function() as_string("cuasync.pipeline: stages must be an integer in 1..64 (got 0)") end)
    assert.equal("string", type(str))
    assert.equal(str, tostring(obj))
    local P = cuasync.pipeline{ stages = 2, stage_bytes = 1024, producer = { warps = 1 }, consumer = { warps = 1 } }
    local tm = plan_map{ 64, 32 }
    local from = {
      -- pipeline.lua, pipeline_loads.lua, model/pipeline_plan.lua, model/cp_async_plan.lua, util's checks, methods
      { function() cuasync.pipeline{ name = "1x", stages = 2, stage_bytes = 1024, producer = { warps = 1 }, consumer = { warps = 1 } } end,
        "cuasync.pipeline: name must be a C identifier" },
      { function() cuasync.pipeline{ stages = 2, loads = {}, producer = { warps = 1 }, consumer = { warps = 1 } } end,
        "cuasync.pipeline: loads must list at least one tensor map" },
      { function() cuasync.pipeline{ stages = 2, loads = { tm }, producer = { warps = 1 }, consumer = { warps = 1, threads = 32 } } end,
        "cuasync.pipeline: consumer needs exactly one of warps" },
      { function() cuasync.pipeline{ stages = 2, loads = { { cp_async = 1000 } }, producer = "all", consumer = { threads = 128 } } end,
        "cuasync.pipeline: loads[1].cp_async" },
      { function() cuasync.pipeline{ stages = 2, stage_bytes = 1024, producer = { warps = 1 }, consumer = { warps = 1 }, bogus = 1 } end,
        "cuasync.pipeline: unknown field 'bogus'" },
      { function() P:check{ smem_optin = 1024 } end, "cuasync.pipeline: pipeline 'main' needs" },
      { function() P:simulate("x") end, "cuasync.pipeline.simulate: argument must be a table" },
      { function() P:mutate{ tx_delta = 0 } end, "cuasync.pipeline.mutate: tx_delta = 0 changes nothing" },
      { function() P:launch_config{} end, "cuasync.pipeline.launch_config: grid is required" },
      { function() P:program{ source = "x", headers = { ["cuasync/pipelines/main.cuh"] = "" } } end,
        "cuasync.pipeline.program: headers already has cuasync/pipelines/main.cuh" },
      { function() P.explain() end, "cuasync.pipeline.explain: call it as P:explain(...), with a colon" },
    }
    for i, t in ipairs(from) do
      local e = caught(t[1])
      assert.equal("plan", errors.kind(e), i .. ": " .. tostring(e))
      assert.equal(t[2], e.message:sub(1, #t[2]), i .. ": " .. e.message)
      assert.truthy(tostring(e):match("^spec/core/errors_spec.lua:%d+: cuasync%.pipeline"), tostring(e))
      assert.is_true(runner.prunes(e))   -- what the sweep's text match said, the kind says now
    end
    -- other calls' refusals stay strings with no kind: a tensor map's, a program's
    for _, f in ipairs({ function() plan_map{ 64, 300 } end, function() cuasync.program{ source = 1 } end }) do
      local e = caught(f)
      assert.equal("string", type(e))
      assert.is_nil(errors.kind(e))
    end
  end)

  it("crosses pcall, coroutines and error(err, 0) rethrows as the same object", function()
    local function refuse() cuasync.pipeline{ stages = 0, stage_bytes = 1024, producer = { warps = 1 }, consumer = { warps = 1 } } end
    local ok, err = pcall(refuse)
    assert.is_false(ok)
    local ok2, err2 = pcall(function() local o, e = pcall(refuse); if not o then error(e, 0) end end)
    assert.is_false(ok2)
    assert.equal("plan", errors.kind(err2))
    assert.equal(tostring(err), tostring(err2))
    local ok3, err3 = pcall(function() error(err, 0) end)
    assert.is_false(ok3)
    assert.is_true(rawequal(err, err3))
    local co = coroutine.create(function() coroutine.yield(1); refuse() end)
    assert.same({ true, 1 }, { coroutine.resume(co) })
    local okc, errc = coroutine.resume(co)
    assert.is_false(okc)
    assert.equal("plan", errors.kind(errc))
    assert.truthy(tostring(errc):match("^spec/core/errors_spec.lua:%d+: cuasync%.pipeline: stages must be"), tostring(errc))
    local okw, errw = pcall(coroutine.wrap(function() refuse() end))
    assert.is_false(okw)
    assert.equal("plan", errors.kind(errw))
    -- concatenation and string methods read the text
    assert.equal("x: " .. tostring(err), "x: " .. err)
    assert.equal(tostring(err):match("cuasync%.%w+"), err:match("cuasync%.%w+"))
  end)
end)

-- docs/reference.md's table of each kind's fields ("The fields of each kind"): kind -> field ->
-- { type, always }. The kind cell is `"compile"` or "every kind".
local function documented()
  local text = assert(io.open("docs/reference.md")):read("*a")
  local t = {}
  for kind, field, ty, present in text:gmatch("\n| ([^|\n]-) | `([%w_]+)` | `([%w_%[%]]+)` | ([^\n]-) |") do
    kind = kind == "every kind" and "*" or kind:match('^`"(%a+)"`$')
    assert(kind, "a kind cell: every kind or `\"kind\"`")
    t[kind] = t[kind] or {}
    t[kind][field] = { type = ty, always = present:match("^always") ~= nil }
  end
  return t
end

local function has_type(v, ty)
  if ty == "integer" then return type(v) == "number" and v == math.floor(v) end
  local elem = ty:match("^(%a+)%[%]$")
  if elem then
    if type(v) ~= "table" then return false end
    for _, x in ipairs(v) do if not has_type(x, elem) then return false end end
    return true
  end
  return type(v) == ty
end

-- Where err breaks the documented fields of its kind: fields not listed, wrong types, missing
-- "always" fields.
local function against(doc, err)
  local kind, bad = errors.kind(err), {}
  assert(kind, "not an error object: " .. tostring(err))
  local want = {}
  for f, d in pairs(doc["*"]) do want[f] = d end
  for f, d in pairs(doc[kind] or {}) do want[f] = d end
  for f, v in pairs(err) do
    local d = want[f]
    if not d then bad[#bad + 1] = ("%s: field %s is not in the table"):format(kind, tostring(f))
    elseif not has_type(v, d.type) then bad[#bad + 1] = ("%s: %s is %s, not %s"):format(kind, f, type(v), d.type) end
  end
  for f, d in pairs(want) do
    if d.always and err[f] == nil then bad[#bad + 1] = ("%s: %s is missing (always there, says the table)"):format(kind, f) end
  end
  table.sort(bad)
  return bad
end

describe("cuasync.errors: the fields docs/reference.md gives each kind", function()
  local doc = documented()
  local streams = require("cuasync.stream")

  it("lists every kind, each field with a type the spec knows", function()
    for _, k in ipairs(errors.KINDS) do assert.truthy(doc[k], k) end
    for _, fields in pairs(doc) do
      for f, d in pairs(fields) do
        assert.truthy(({ string = 1, integer = 1, number = 1, boolean = 1, table = 1, ["string[]"] = 1, ["integer[]"] = 1 })[d.type],
                      f .. ": " .. d.type)
      end
    end
    assert.is_false(has_type(1.5, "integer"))
    assert.is_false(has_type({ "a", 2 }, "string[]"))
    assert.same({ "plan: position is number, not string", "plan: stray is missing (always there, says the table)" },
                against({ ["*"] = doc["*"], plan = { position = { type = "string" }, stray = { type = "string", always = true } } },
                        errors.new("plan", { message = "m", position = 1 })))
  end)

  it("holds each kind raised on the CPU to it", function()
    local got = {}
    -- compile: NVRTC refuses a program
    got[#got + 1] = caught(function() cuasync.program{ source = BAD, name = "bad.cu", arch = "sm_90a" }:compile() end)
    -- plan: a plan refused
    got[#got + 1] = caught(function() cuasync.pipeline{ stages = 0, stage_bytes = 1024, producer = { warps = 1 }, consumer = { warps = 1 } } end)
    -- driver: the object native.check raises for a failed call (no driver here to fail one)
    got[#got + 1] = native.driver_error("cuMemcpyDtoH: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access) while downloading", 700)
    -- the driver names the code where there is one; without it, the number
    assert.equal(H.gpu and "CUDA_ERROR_ILLEGAL_ADDRESS" or "CUresult 700", got[#got].code)
    -- hang: a record a plan's consumer wrote, and one of a bare bounded wait of a gone module
    local P = cuasync.pipeline{ name = "main", stages = 4, loads = { plan_map{ 64, 64 } }, producer = { warps = 1 }, consumer = { warps = 4 } }
    local r = ffi.new("cuasync_watchdog_record")
    r.state, r.block[0], r.warp, r.base, r.bar = 1, 17, 4, 0x400, 0x400 + P.full_offset + 16
    r.parity, r.phase_parity, r.stage, r.role, r.iteration, r.received, r.armed = 1, 1, 2, 2, 37, 0xFFFFFFFF, 40
    r.waited_ns, r.timeout_ns = 2000e6, 2000e6
    local labels = { "'mainloop'" }
    labels["'mainloop'"] = true
    got[#got + 1] = hang.error_from(r, { name = "k.cu", watch = { last = "mainloop", where = "node 1 of graph 'g'", labels = labels },
                                         program = { hooks = { plan = P } } }, true)
    assert.same({ "main", "full", 40, "node 1 of graph 'g'" }, { got[#got].pipeline, got[#got].which, got[#got].armed_stages, got[#got].node })
    local bare = ffi.new("cuasync_watchdog_record")
    bare.state, bare.parity, bare.phase_parity, bare.received, bare.armed = 1, 0xFFFFFFFF, 2, 0xFFFFFFFF, 0xFFFFFFFF
    bare.waited_ns, bare.timeout_ns = 500e6, 500e6
    got[#got + 1] = hang.error_from(bare, nil, false)
    assert.same({ "a bounded wait", "?", true }, { got[#got].barrier, got[#got].kernel, got[#got].sticky })
    -- timeout: a host wait past timeout_ms on work nothing can cancel (the wait's own code)
    got[#got + 1] = caught(function() streams.poll("synchronize", 1, "the work", function() return false end) end)
    assert.equal("timeout", errors.kind(got[#got]))
    -- cancelled: the same wait, with a watched kernel that leaves once its abort word is raised
    local saved, left = { cancel = cancel.cancel, lower = cancel.lower }, false
    cancel.cancel = function() left = true; return { { labels = { "'k'" }, record = { state = 0 } } } end
    cancel.lower = function() end
    local ok, c = pcall(streams.poll, "synchronize", 1, "the work", function() return left end)
    cancel.cancel, cancel.lower = saved.cancel, saved.lower
    assert.is_false(ok)
    got[#got + 1] = c
    local kinds, bad = {}, {}
    for _, e in ipairs(got) do
      kinds[#kinds + 1] = errors.kind(e)
      for _, b in ipairs(against(doc, e)) do bad[#bad + 1] = b end
    end
    assert.same({ "compile", "plan", "driver", "hang", "hang", "timeout", "cancelled" }, kinds)
    assert.same({}, bad)
  end)
end)
