-- The dependency rules of the house, as a spec (DESIGN.md "Layers"):
--   model/    pure Lua: requires nothing native (no ffi, no cuasync module outside model/ but util)
--   tools/, kernels/   never required by the core (lua/cuasync/*.lua other than init.lua, which
--             exposes them on first use)
--   native/   no dlsym outside the loader; no driver attribute number written as a literal
--   kernels-src/   no open-coded mbarrier spin outside watchdog.cuh
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
  local r = {}
  for m in src:gmatch("require%s*%(?%s*[\"']([%w_%.]+)[\"']") do r[#r + 1] = m end
  return r
end

describe("layout", function()
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
      for _, m in ipairs({ "swizzle", "launch_rules", "clusters", "tensormap_rules", "ring" }) do
        require("cuasync.model." .. m)
      end
      print(require("cuasync.model.swizzle").layout("128B", { 32, 8 }, 4).bytes)
    ]], { env = { CUASYNC_LIB = "/nonexistent/libcuasync.so" } })
    assert.is_true(ok, out)
    assert.equal("1024\n", out)
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

  it("no dlsym outside the loader", function()
    for _, f in ipairs(files("ls native/*.c native/*.h")) do
      if f ~= "native/cuasync_loader.c" then
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
    local list = files("ls kernels-src/*.cu kernels-src/cuasync/*.cuh")
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
    assert.truthy(read("kernels-src/cuasync/pipeline.cuh"):find("mbarrier::wait_parity", 1, true))
  end)
end)
