-- The manual stays true: every public name reachable from require("cuasync") (the lazily loaded
-- tools included) and every method of its objects is in docs/reference.md, and every name the
-- reference writes as `cuasync.x.y` or `var:method(` exists; every option field a page names for
-- a launch config, a plan, a sweep, a run, the model or a program is one the code takes, and the
-- reference's signature of each names every field the code takes.
local cuasync = require("cuasync")
local H = require("helper")
local S = require("support.surface")


-- How the reference names an instance of each class (the methods are `VAR:name(`).
local VARS = { Program = "prog", Module = "mod", Kernel = "k", Config = "cfg", Device = "dev", Buffer = "buf",
               HostBuffer = "hbuf", Stream = "s", Event = "ev", Graph = "G", TensorMap = "tm", Layout = "L",
               Pipeline = "P", Barrier = "mb", Arrival = "arrival", Token = "token", Role = "t", Result = "r",
               Sweep = "S", K = "K", Pattern = "p", Bulk = "bulk", Hang = "err", Trace = "T",
               GraphBuilder = "g", GraphNode = "node", Scheduler = "sched", Simulation = "sim", SharedLayout = "L" }
-- The module's lazy names and the public methods (the sweep's internal classes left out): the
-- walk the pinned surface makes too (spec/support/surface.lua).
local lazy_names, methods = S.lazy_names, function() return S.methods() end

describe("docs/reference.md", function()
  local ref = H.read("docs/reference.md")

  it("lists every public name of the module, its tables' names and its objects' methods", function()
    local missing = {}
    local count = 0
    -- the walk the pinned surface makes (spec/support/surface.lua): the module's names, the lazy
    -- ones, their tables' names, and model's and limits' tables' names
    for _, e in ipairs(S.lua(cuasync, lazy_names(), nil, {})) do
      count = count + 1
      local kk = e.name:match("([^.]+)$")
      if e.name:match("^cuasync%.[^.]+$") then
        if not ref:find(e.name, 1, true) then missing[#missing + 1] = e.name end
      elseif not (ref:find(e.name, 1, true) or ref:find("`" .. kk .. "`", 1, true) or ref:find("`" .. kk .. "(", 1, true)
                  or ref:find(", `" .. kk, 1, true) or ref:find("." .. kk .. "`", 1, true)) then
        missing[#missing + 1] = e.name
      end
    end
    for _, m in ipairs(methods()) do
      count = count + 1
      local var = VARS[m.class]
      if not var then
        missing[#missing + 1] = ("%s:%s (%s: a class the reference does not name; add it to VARS)"):format(m.class, m.name, m.file)
      elseif not (ref:find(var .. ":" .. m.name .. "(", 1, true) or ref:find(var .. ":" .. m.name .. "{", 1, true)) then
        missing[#missing + 1] = ("%s:%s (%s)"):format(var, m.name, m.class)
      end
    end
    io.stderr:write(("docs: %d public names and methods, all in docs/reference.md\n"):format(count))
    assert.same({}, missing)
    assert.truthy(count > 250, tostring(count))
  end)

  it("names nothing that does not exist", function()
    local wrong = {}
    for path in ref:gmatch("`(cuasync%.[%w_%.]+)") do
      local v = cuasync
      for part in path:gmatch("[^%.]+") do
        if part ~= "cuasync" then v = type(v) == "table" and v[part] or nil end
      end
      if v == nil then wrong[#wrong + 1] = path end
    end
    local by = {}
    for _, m in ipairs(methods()) do by[(VARS[m.class] or "?") .. ":" .. m.name] = true end
    -- handle.define gives every handle (buffer, host buffer, stream, event) its close
    for _, v in ipairs({ "buf", "hbuf", "s", "ev" }) do by[v .. ":close"] = true end
    for var, name in ref:gmatch("`(%a+):([%w_]+)%(") do
      local known = false
      for _, v in pairs(VARS) do if v == var then known = true end end
      if known and not by[var .. ":" .. name] then wrong[#wrong + 1] = var .. ":" .. name end
    end
    assert.same({}, wrong)
  end)
end)

-- The option tables the docs name, against the code's known-field lists (the lists a call's
-- util.known_fields checks: one table in the code, read here). Each set: the code's list, the
-- markers after which a page opens such a table, and the reference's own signature (the marker
-- in docs/reference.md that lists every field). A field a page names that the code refuses fails
-- (so a removed name, such as the launch's `pdl`, cannot come back into the docs); a field the
-- code takes that the reference's signature leaves out fails, unless UNDOCUMENTED says why.
describe("the option fields in docs/ and README.md", function()
  local DF = require("support.doc_fields")
  local SETS = {
    { what = "the launch config (k:launch, k:prepare)", code = require("cuasync.model.launch_rules").FIELDS,
      markers = { ":launch{", ":launch({", ":prepare({", "`cfg` is `{" }, reference = "`cfg` is `{" },
    { what = "cuasync.pipeline{...}", code = require("cuasync.pipeline").FIELDS,
      markers = { "cuasync.pipeline{" }, reference = "- `cuasync.pipeline{" },
    { what = "cuasync.scheduler{...}", code = require("cuasync.scheduler").FIELDS,
      markers = { "cuasync.scheduler{" }, reference = "- `cuasync.scheduler{" },
    { what = "cuasync.sweep{...}", code = require("cuasync.tools.sweep.options").SWEEP_FIELDS,
      markers = { "cuasync.sweep{" }, reference = "- `cuasync.sweep{" },
    { what = "S:run{...}", code = require("cuasync.tools.sweep.options").RUN_FIELDS,
      markers = { "S:run{", "S:run({", "S:run([{" }, reference = "- `S:run([{" },
    { what = "cuasync.model.run{...}", code = require("cuasync.model.protocol_options").FIELDS,
      markers = { "model.run{" }, reference = "- `cuasync.model.run{" },
    { what = "cuasync.program{...} and P:program{...}", code = require("cuasync.program").FIELDS,
      markers = { "cuasync.program{", ":program{" }, reference = "- `cuasync.program{" },
  }
  -- Fields the code takes that the reference's signature need not name, each with why. (None now.)
  local UNDOCUMENTED = {}
  local function pages()
    local t = { "README.md" }
    local p = io.popen("ls docs/*.md")
    for f in p:lines() do t[#t + 1] = f end
    p:close()
    return t
  end

  it("reads a table literal's own field names, in prose and in code", function()
    local text = 'x{ a = "b, c = d", e = { f = 1, g }, h | i = 2, j, -- k = 3\n l = function(p) local m, n = 1, 2 return p == q, r end, `\n  o }'
    assert.same({ "a", "e", "h", "i", "j", "l", "o" }, DF.fields(text, 2))
    assert.same({ "grid", "block" }, DF.fields("`cfg` is `{ grid,\n  block }`", 11))
  end)

  it("name only fields the code takes, and the reference names every one it takes", function()
    local wrong, unnamed, seen = {}, {}, 0
    local ref = H.read("docs/reference.md")
    for _, set in ipairs(SETS) do
      for _, path in ipairs(pages()) do
        for _, lit in ipairs(DF.find(H.read(path), set.markers)) do
          for _, f in ipairs(lit.fields) do
            seen = seen + 1
            if not set.code[f] then
              wrong[#wrong + 1] = ("%s:%d: %s names '%s', which the code refuses (fields: %s)"):format(path, lit.line, set.what, f,
                require("cuasync.util").sorted_keys(set.code))
            end
          end
        end
      end
      local sig = DF.find(ref, { set.reference })
      assert.equal(1, #sig, set.what .. ": the reference's signature (" .. set.reference .. ") once")
      local named = {}
      for _, f in ipairs(sig[1].fields) do named[f] = true end
      for f in pairs(set.code) do
        if not named[f] and not (UNDOCUMENTED[set.what] and UNDOCUMENTED[set.what][f]) then
          unnamed[#unnamed + 1] = ("docs/reference.md:%d: %s leaves out '%s', which the code takes"):format(sig[1].line, set.what, f)
        end
      end
    end
    table.sort(wrong)
    table.sort(unnamed)
    assert.same({}, wrong)
    assert.same({}, unnamed)
    assert.truthy(seen > 150, tostring(seen))
  end)

  it("fail on a field the code does not take, and on one the reference leaves out", function()
    local launch = require("cuasync.model.launch_rules").FIELDS
    local lit = DF.find("k:launch({ grid = 1, block = 32, pdl = true }, buf)", { ":launch({" })[1]
    local refused = {}
    for _, f in ipairs(lit.fields) do if not launch[f] then refused[#refused + 1] = f end end
    assert.same({ "pdl" }, refused)
    local sig = DF.find("`cfg` is `{ grid, block, smem }`", { "`cfg` is `{" })[1]
    local named = {}
    for _, f in ipairs(sig.fields) do named[f] = true end
    assert.is_nil(named.programmatic)
    assert.truthy(launch.programmatic)
  end)
end)

describe("docs/device.md", function()
  local device_doc = require("cuasync.tools.device_doc")
  local device_doc_md = require("cuasync.tools.device_doc_md")
  local parsed = device_doc.parse(cuasync.kernels_dir())

  it("is what the device headers say (make docs rewrites it)", function()
    local want = device_doc_md.render(parsed)
    if H.read("docs/device.md") ~= want then
      error("docs/device.md is out of step with kernels-src/cuasync/*.cuh: run `make docs` and commit the page", 0)
    end
  end)

  it("names the PTX, its ISA version and its SM above every function that emits inline PTX", function()
    local bare, count = {}, 0
    for _, h in ipairs(parsed.headers) do
      local named = {}
      for _, f in ipairs(h.functions) do if #f.ptx > 0 then named[f.name] = true end end
      for _, f in ipairs(h.functions) do
        count = count + 1
        if f.asm and not named[f.name] then bare[#bare + 1] = f.name .. ": no PTX comment above it" end
        for _, p in ipairs(f.ptx) do
          if not p.isa then bare[#bare + 1] = ("%s: `%s` has no PTX ISA version and SM"):format(f.name, p.text) end
        end
        if f.sm == nil then bare[#bare + 1] = f.name .. ": no SM derived" end
      end
    end
    assert.same({}, bare)
    assert.truthy(count > 120, tostring(count))
  end)

  it("documents every device function the bundled kernels call", function()
    local missing, seen = {}, {}
    local ALIASES = { cpa = "cp_async", mb = "mbarrier", cl = "cluster", wg = "wgmma" }
    local NS = { mbarrier = true, cp_async = true, bulk = true, tma = true, cluster = true, watchdog = true,
                 pdl = true, warpgroup = true, wgmma = true }
    local p = io.popen("ls " .. cuasync.kernels_dir() .. "/*.cu")
    for file in p:lines() do
      for ns, fn in H.read(file):gmatch("([%w_]+)::([%w_]+)%s*[<(]") do
        local name = ns .. "::" .. fn
        local alias = ALIASES[ns]   -- the kernels' namespace aliases (namespace mb = cuasync::mbarrier)
        if alias then name = alias .. "::" .. fn end
        if NS[name:match("^[%w_]+")] and not parsed.by_name[name] and not seen[name] then
          seen[name] = true
          missing[#missing + 1] = name .. " (" .. file:match("[^/]+$") .. ")"
        end
      end
    end
    p:close()
    assert.same({}, missing)
    assert.truthy(next(seen) == nil)
  end)
end)

describe("LuaCATS annotations (lua/cuasync/types/)", function()
  -- the public classes whose every method and field a language server completes
  local CLASSES = { "Pipeline", "Sweep", "Program", "Module", "Kernel", "Config", "Buffer", "HostBuffer", "Device",
                    "Stream", "Event", "Graph", "GraphBuilder", "GraphNode", "TensorMap", "Hang", "Trace" }

  it("annotate every method of the public classes, and only methods that exist", function()
    local meta = ""
    for _, f in ipairs({ "core", "launch", "pipeline" }) do meta = meta .. H.read("lua/cuasync/types/" .. f .. ".lua") end
    local want, missing, wrong = {}, {}, {}
    for _, c in ipairs(CLASSES) do
      want[c] = {}
      assert.truthy(meta:find("---@class cuasync." .. c .. "\n", 1, true), c .. ": no ---@class")
    end
    for _, m in ipairs(methods()) do
      if want[m.class] then
        want[m.class][m.name] = true
        if not meta:find(("function %s:%s("):format(m.class, m.name), 1, true) then missing[#missing + 1] = m.class .. ":" .. m.name end
      end
    end
    for _, c in ipairs({ "Buffer", "HostBuffer", "Stream", "Event" }) do want[c].close = true end   -- handle.define
    for c, name in meta:gmatch("\nfunction ([%w_]+):([%w_]+)%(") do
      if not (want[c] and want[c][name]) then wrong[#wrong + 1] = c .. ":" .. name end
    end
    assert.same({}, missing)
    assert.same({}, wrong)
  end)

  it("type the fields the reference lists for plans and launch configs", function()
    local P = H.read("lua/cuasync/types/pipeline.lua")
    for _, f in ipairs({ "tx_bytes", "smem_bytes", "block", "full_count", "empty_count", "stages", "cluster_size" }) do
      assert.truthy(P:find("---@field " .. f .. " ", 1, true), "Pipeline." .. f)
    end
    local L = H.read("lua/cuasync/types/launch.lua")
    for _, f in ipairs({ "grid", "block", "smem", "cluster", "stream" }) do
      assert.truthy(L:find("---@field " .. f .. " ", 1, true), "Config." .. f)
    end
  end)
end)
