-- The dependency rules of the house, as a spec (DESIGN.md "Layers"):
--   model/    pure Lua: requires nothing native (no ffi, no cuasync module outside model/ but util)
--   tools/, kernels/   never required by the core (lua/cuasync/*.lua other than init.lua, which
--             exposes them on first use)
--   core      no require cycle among lua/cuasync modules; requires at the top of a file (one inside
--             a function carries a "lazy:" comment saying why)
--   tools/, kernels/   require core modules, never the cuasync facade
--   native/   no dlsym outside the loaders (driver, toolkit, NVML); no driver attribute number
--             written as a literal
--   kernels-src/   no open-coded mbarrier spin outside watchdog.cuh; no asm in kernels-src/*.cu
--             (PTX lives in the device headers, one wrapper each)
local H = require("helper")

local function files(cmd)
  local out, p = {}, io.popen(cmd)
  for l in p:lines() do out[#out + 1] = l end
  p:close()
  table.sort(out)
  return out
end

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

local function requires(src)
  src = src:gsub("%-%-%[%[.-%]%]", ""):gsub("%-%-[^\n]*", "")
  local r = {}
  for m in src:gmatch("require%s*%(?%s*[\"']([%w_%.]+)[\"']") do r[#r + 1] = m end
  return r
end

-- module name -> { required module names } for every lua/cuasync module (requires anywhere in the file)
local function graph()
  local g = {}
  for _, f in ipairs(files("find lua/cuasync -name '*.lua'")) do
    local name = f:gsub("^lua/", ""):gsub("%.lua$", ""):gsub("/init$", ""):gsub("/", ".")
    g[name] = {}
    for _, m in ipairs(requires(read(f))) do
      if m:match("^cuasync") then g[name][#g[name] + 1] = m end
    end
  end
  return g
end

-- The first cycle found in g, as a list "a -> b -> a", or nil.
local function cycle(g)
  local state, stack = {}, {}
  local function visit(n)
    state[n] = "open"
    stack[#stack + 1] = n
    for _, m in ipairs(g[n] or {}) do
      if state[m] == "open" then
        local path, on = {}, false
        for _, s in ipairs(stack) do if s == m then on = true end if on then path[#path + 1] = s end end
        path[#path + 1] = m
        return table.concat(path, " -> ")
      elseif state[m] == nil and g[m] then
        local c = visit(m)
        if c then return c end
      end
    end
    stack[#stack] = nil
    state[n] = "done"
  end
  local names = {}
  for n in pairs(g) do names[#names + 1] = n end
  table.sort(names)
  for _, n in ipairs(names) do
    if not state[n] then local c = visit(n) if c then return c end end
  end
end

describe("layout", function()
  it("no require cycle among lua/cuasync modules (computed from the require lines)", function()
    local g = graph()
    assert.is_true(g["cuasync.kernel"] ~= nil and g["cuasync.pipeline"] ~= nil)
    assert.is_nil(cycle(g))
    -- the check finds a cycle when there is one
    assert.equal("a -> b -> a", cycle({ a = { "b" }, b = { "a" } }))
  end)

  it("the core requires at the top of a file; a require inside a function says why (lazy:)", function()
    for _, f in ipairs(files("ls lua/cuasync/*.lua lua/cuasync/model/*.lua")) do
      local prev = ""
      for line in (read(f) .. "\n"):gmatch("([^\n]*)\n") do
        if line:match("^%s+") and line:find("require%s*%(") and not line:match("^%s*%-%-") then
          local why = line:find("lazy:", 1, true) or prev:find("lazy:", 1, true)
          assert.truthy(why, f .. ": a require inside a function, with no lazy: comment: " .. line)
        end
        if line:match("%S") then prev = line end
      end
    end
  end)

  it("a file that uses bit.* requires it (no reliance on LuaJIT's global)", function()
    for _, f in ipairs(files("find lua bin examples spec -name '*.lua' -o -name cuasync -type f")) do
      local src = read(f):gsub("%-%-[^\n]*", "")
      if src:find("[^%w_.]bit%.%a") then
        assert.truthy(src:find('local bit = require%("bit"%)'), f .. " uses bit without require(\"bit\")")
      end
    end
  end)

  it("swizzle modes are tabled once, in model/swizzle.lua", function()
    for _, f in ipairs(files("find lua examples bin -name '*.lua'")) do
      if f ~= "lua/cuasync/model/swizzle.lua" then
        for line in read(f):gmatch("[^\n]+") do
          local again = line:find('%["32B"%]%s*=%s*%d') and line:find('%["64B"%]%s*=%s*%d')
          assert.is_nil(again, f .. " tables the swizzle modes again: " .. line)
        end
      end
    end
    local sw = require("cuasync.model.swizzle")
    assert.same({ math.huge, 128, 128, 1024 }, { sw.limit("none"), sw.limit("128B"), sw.repeat_bytes("none"), sw.repeat_bytes("128B") })
  end)

  it("tools/ and kernels/ require core modules, never the cuasync facade", function()
    local list = files("find lua/cuasync/tools lua/cuasync/kernels -name '*.lua'")
    assert.is_true(#list >= 20)   -- tools/sweep/ and tools/report/ included
    for _, f in ipairs(list) do
      for _, m in ipairs(requires(read(f))) do
        assert.is_true(m ~= "cuasync", f .. " requires the facade")
      end
    end
  end)

  it("no Lua file in lua/ or bin/cuasync is over 300 lines (bin/cuasync: 100, a launcher)", function()
    local over = {}
    for _, f in ipairs(files("find lua -name '*.lua'")) do
      local _, n = read(f):gsub("\n", "")
      if n > 300 then over[#over + 1] = ("%s has %d lines"):format(f, n) end
    end
    local _, n = read("bin/cuasync"):gsub("\n", "")
    if n > 100 then over[#over + 1] = ("bin/cuasync has %d lines"):format(n) end
    assert.same({}, over)
  end)

  -- A line's code without its comment and the text of its strings (a rule's word inside a
  -- message or a comment is not a use).
  local function code_lines(path)
    local out, n = {}, 0
    local src = read(path):gsub("%-%-%[%[.-%]%]", function(c) return (c:gsub("[^\n]", "")) end)
    for line in (src .. "\n"):gmatch("([^\n]*)\n") do
      n = n + 1
      line = line:gsub('"[^"]*"', '""'):gsub("'[^']*'", "''"):gsub("%-%-.*$", "")
      out[#out + 1] = { n = n, text = line }
    end
    return out
  end

  local function uses(pattern, allowed)
    local found = {}
    for _, f in ipairs(files("find lua -name '*.lua'; echo bin/cuasync; find examples -name '*.lua'")) do
      if not allowed[f] then
        for _, l in ipairs(code_lines(f)) do
          if l.text:find(pattern) then found[#found + 1] = ("%s:%d"):format(f, l.n) end
        end
      end
    end
    return found
  end

  it("only tools/isolate.lua starts a process (io.popen, os.execute)", function()
    assert.same({}, uses("io%.popen", { ["lua/cuasync/tools/isolate.lua"] = true }))
    assert.same({}, uses("os%.execute", { ["lua/cuasync/tools/isolate.lua"] = true }))
    -- the rule sees a use, and not a word in a comment or a string
    local f = os.tmpname()
    local h = assert(io.open(f, "w"))
    h:write('local p = io.popen("ls")\n-- io.popen in a comment\nprint("os.execute in a string")\n')
    h:close()
    local seen = {}
    for _, l in ipairs(code_lines(f)) do if l.text:find("io%.popen") or l.text:find("os%.execute") then seen[#seen + 1] = l.n end end
    os.remove(f)
    assert.same({ 1 }, seen)
  end)

  it("only fs.lua opens a file for writing (io.open with w or a)", function()
    local found = {}
    for _, f in ipairs(files("find lua -name '*.lua'; echo bin/cuasync; find examples -name '*.lua'")) do
      if f ~= "lua/cuasync/fs.lua" then
        local text = read(f):gsub("%-%-[^\n]*", "")
        for mode in text:gmatch("io%.open%s*%b()") do
          if mode:find(',%s*"[wa]') or mode:find(",%s*'[wa]") then found[#found + 1] = f .. ": " .. mode end
        end
      end
    end
    assert.same({}, found)
  end)

  it("kernels-src/ (installed) holds only kernels that lua/, examples/ or a guide use; spec-only ones live in spec/support/kernels", function()
    local unused = {}
    local users = {}
    for _, f in ipairs(files("find lua examples -name '*.lua'; ls docs/*.md | grep -v device.md")) do users[#users + 1] = read(f) end
    local all = table.concat(users, "\n")
    for _, f in ipairs(files("ls kernels-src/*.cu")) do
      local name = f:match("([^/]+)$")
      if not all:find(name, 1, true) then unused[#unused + 1] = name end
    end
    assert.same({}, unused)
  end)

  it("no spec depends on an absolute path staying absent: H.missing() gives one", function()
    local found = {}
    for _, f in ipairs(files("find spec -name '*.lua'")) do
      if f ~= "spec/helper.lua" and read(f):find("/non" .. "existent", 1, true) then found[#found + 1] = f end
    end
    assert.same({}, found)
  end)

  it("no asm in kernels-src/*.cu: PTX lives in the device headers", function()
    local list = files("ls kernels-src/*.cu spec/support/kernels/*.cu")
    assert.is_true(#list > 10)
    for _, f in ipairs(list) do
      local src = read(f):gsub("/%*.-%*/", ""):gsub("//[^\n]*", "")
      assert.is_nil(src:find("asm%s*[%(v]"), f .. " has inline asm")
    end
  end)

  it("model/ loads nothing native", function()
    local list = files("ls lua/cuasync/model/*.lua")
    assert.is_true(#list >= 5)
    for _, f in ipairs(list) do
      local src = read(f)
      for _, m in ipairs(requires(src)) do
        local ok = m == "bit" or m == "cuasync.util" or m:match("^cuasync%.model%.")
        assert.is_truthy(ok, f .. " requires " .. m .. " (model/ is pure: util and model/ only)")
      end
      assert.is_nil(src:find("ffi%.load"), f .. " calls ffi.load")
    end
  end)

  it("model/ runs in a process where the native library cannot load", function()
    local ok, out = require("cuasync.tools.isolate").run([[
      package.cpath = ""
      package.preload["ffi"] = function() error("ffi used") end
      package.loaded["ffi"] = nil
      local p = io.popen("ls lua/cuasync/model/*.lua")
      local n = 0
      for f in p:lines() do require("cuasync.model." .. f:match("([%w_]+)%.lua$")); n = n + 1 end
      p:close()
      print(n)
      print(require("cuasync.model.swizzle").layout("128B", { 32, 8 }, 4).bytes)
    ]], { env = { CUASYNC_LIB = H.missing("libcuasync.so") } })
    assert.is_true(ok, out)
    local n = #files("ls lua/cuasync/model/*.lua")
    assert.equal(n .. "\n1024\n", out)
  end)

  it("the core never requires tools/ or kernels/", function()
    for _, f in ipairs(files("ls lua/cuasync/*.lua lua/cuasync/model/*.lua")) do
      if f ~= "lua/cuasync/init.lua" then
        for _, m in ipairs(requires(read(f))) do
          assert.is_nil(m:match("^cuasync%.tools") or m:match("^cuasync%.kernels"), f .. " requires " .. m)
        end
      end
    end
  end)

  it("init.lua exposes tools/ and kernels/ only on first use", function()
    local ok, out = require("cuasync.tools.isolate").run([[
      local c = require("cuasync")
      print(package.loaded["cuasync.tools.bench"] == nil, package.loaded["cuasync.kernels.copy"] == nil)
      local _ = c.bench, c.copy
      print(package.loaded["cuasync.tools.bench"] ~= nil, package.loaded["cuasync.kernels.copy"] ~= nil)
    ]])
    assert.is_true(ok, out)
    assert.equal("true\ttrue\ntrue\ttrue\n", out)
  end)

  it("native/ writes no cuasync.<module>: prefix (the Lua side owns prefixes)", function()
    for _, f in ipairs(files("ls native/*.c")) do
      local code = read(f):gsub("/%*.-%*/", "")
      assert.is_nil(code:match('"cuasync%.[%w_.]+: '), f .. " writes a cuasync.<module>: prefix")
    end
  end)

  it("one READY: the driver-init guard is defined once, in cuasync_loader.h", function()
    for _, f in ipairs(files("ls native/*.c native/*.h")) do
      if f ~= "native/cuasync_loader.h" then
        assert.is_nil(read(f):find("#define%s+[%w_]*READY"), f .. " defines its own READY")
      end
    end
  end)

  it("no dlsym outside the loaders (the driver's, the toolkit's and NVML's)", function()
    local LOADER = { ["native/cuasync_loader.c"] = true, ["native/cuasync_toolkit.c"] = true,
                     ["native/cuasync_nvml.c"] = true }
    for _, f in ipairs(files("ls native/*.c native/*.h")) do
      if not LOADER[f] then
        local code = read(f):gsub("/%*.-%*/", ""):gsub("//[^\n]*", "")
        assert.is_nil(code:find("dlsym%s*%("), f .. " calls dlsym")
      end
    end
  end)

  it("driver attribute numbers are named, never literals", function()
    for _, f in ipairs(files("ls native/*.c lua/cuasync/*.lua")) do
      local src = read(f)
      assert.is_nil(src:match("cuFuncGetAttribute, %(%(?[^,]*, %d"), f)
      assert.is_nil(src:match("{ %d+, offsetof"), f .. " has a literal attribute id")
      assert.is_nil(src:match("A%(%d+,"), f .. " has a literal device attribute id")
      assert.is_nil(src:match("%.id = %d"), f .. " has a literal launch attribute id")
      assert.is_nil(src:match("set_attribute%(%d"), f .. " has a literal function attribute id")
    end
  end)

  it("no open-coded mbarrier spin outside watchdog.cuh", function()
    local list = files("ls kernels-src/*.cu kernels-src/cuasync/*.cuh spec/support/kernels/*.cu")
    assert.is_true(#list > 10)
    for _, f in ipairs(list) do
      if f ~= "kernels-src/cuasync/watchdog.cuh" then
        local src = read(f):gsub("//[^\n]*", "")
        for line in src:gmatch("[^\n]+") do
          local spin = line:match("while%s*%(.-wait") or line:match("for%s*%(.*%).-try_wait")
                       or line:match("for%s*%(.*%).-test_wait") or line:match("[%(/]%s*STAGES%s*%)%s*&%s*1")
          assert.is_nil(spin, f .. ": " .. line)
        end
      end
    end
  end)

  it("every wait in mbarrier.cuh goes through watchdog::spin_until", function()
    local src = read("kernels-src/cuasync/mbarrier.cuh")
    local _, n = src:gsub("watchdog::spin_until", "")
    assert.is_true(n >= 4, "wait and wait_parity, both arch branches")
    for _, h in ipairs({ "pipeline.cuh", "pipeline_cp_async.cuh", "ring.cuh" }) do
      assert.truthy(read("kernels-src/cuasync/" .. h):find("mbarrier::wait_parity", 1, true), h)
    end
  end)
end)
