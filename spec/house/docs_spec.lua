-- The manual stays true: every public name reachable from require("cuasync") (the lazily loaded
-- tools included) and every method of its objects is in docs/reference.md, and every name the
-- reference writes as `cuasync.x.y` or `var:method(` exists.
local cuasync = require("cuasync")
local H = require("helper")
local S = require("support.surface")


-- How the reference names an instance of each class (the methods are `VAR:name(`).
local VARS = { Program = "prog", Module = "mod", Kernel = "k", Config = "cfg", Device = "dev", Buffer = "buf",
               HostBuffer = "hbuf", Stream = "s", Event = "ev", Graph = "G", TensorMap = "tm", Layout = "L",
               Pipeline = "P", Barrier = "mb", Arrival = "arrival", Token = "token", Role = "t", Result = "r",
               Sweep = "S", K = "K", Pattern = "p", Bulk = "bulk", Hang = "err", Trace = "T" }
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
                    "Stream", "Event", "Graph", "TensorMap", "Hang", "Trace" }

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
