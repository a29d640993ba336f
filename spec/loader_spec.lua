-- The loader: require works with no driver; GPU calls then fail clearly; overrides and tracing.
local H = require("helper")

describe("cuasync loader", function()
  it("reports a missing driver from available() without raising", function()
    local ok, out = H.luajit([[
      local c = require("cuasync")
      local ok, why = c.available()
      print(tostring(ok) .. "|" .. why)
    ]], { CUASYNC_CUDA_LIB = "/nonexistent/libcuda.so.1" })
    assert.is_true(ok, out)
    assert.equal("false|no CUDA driver: /nonexistent/libcuda.so.1 not found (CUASYNC_CUDA_LIB)\n", out)
  end)

  if not H.gpu then
    it("says libcuda.so.1 was not found on a machine without a driver", function()
      local ok, why = require("cuasync").available()
      assert.is_false(ok)
      assert.equal("no CUDA driver: libcuda.so.1 not found", why)
    end)
  end

  it("raises the same clear error from a GPU call with no driver, every time", function()
    local ok, out = H.luajit([[
      local c = require("cuasync")
      for i = 1, 2 do
        local ok, err = pcall(c.alloc, 1024)
        print(err)
      end
    ]], { CUASYNC_CUDA_LIB = "/nonexistent/libcuda.so.1" })
    assert.is_true(ok, out)
    local line = "no CUDA driver: /nonexistent/libcuda.so.1 not found (CUASYNC_CUDA_LIB)"
    assert.equal(line .. "\n" .. line .. "\n", out)
  end)

  it("compiles with no driver at all", function()
    local ok, out = H.luajit([[
      local c = require("cuasync")
      local m = c.program{ source = 'extern "C" __global__ void k(int *p) { *p = 1; }', arch = "sm_90a" }:compile()
      print(#m:cubin() > 0, m:ptx():find(".entry k", 1, true) ~= nil)
    ]], { CUASYNC_CUDA_LIB = "/nonexistent/libcuda.so.1", CUASYNC_CACHE = "0" })
    assert.is_true(ok, out)
    assert.equal("true\ttrue\n", out)
  end)

  it("prints each loading attempt with CUASYNC_TRACE=1", function()
    local _, out = H.luajit([[ require("cuasync").available() ]],
      { CUASYNC_TRACE = "1", CUASYNC_CUDA_LIB = "/nonexistent/libcuda.so.1" })
    assert.truthy(out:find('cuasync: dlopen("/nonexistent/libcuda.so.1"):', 1, true), out)
  end)

  it("refuses an NVRTC override that cannot be loaded, without falling back", function()
    local ok, out = H.luajit([[
      local c = require("cuasync")
      local ok, err = pcall(function() c.program{ source = "", arch = "sm_90a" }:compile() end)
      print(err)
    ]], { CUASYNC_NVRTC = "/nonexistent/libnvrtc.so", CUASYNC_CACHE = "0" })
    assert.is_true(ok, out)
    assert.truthy(out:find("no NVRTC: /nonexistent/libnvrtc.so could not be loaded (CUASYNC_NVRTC)", 1, true), out)
  end)

  it("checks the Lua and native versions against each other", function()
    local c = require("cuasync")
    local ffi = require("ffi")
    assert.equal(c.version, ffi.string(require("cuasync.native").C.cuasync_version()))
  end)
end)
