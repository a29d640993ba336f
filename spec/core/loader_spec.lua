-- The loader: require works with no driver; GPU calls then fail clearly; overrides and tracing.
local H = require("helper")
local NOLIB = H.missing("libcuda.so.1")   -- a driver that is not there

describe("cuasync loader", function()
  it("reports a missing driver from available() without raising", function()
    local ok, out = H.luajit([[
      local c = require("cuasync")
      local ok, why = c.available()
      print(tostring(ok) .. "|" .. why)
    ]], { CUASYNC_CUDA_LIB = NOLIB })
    assert.is_true(ok, out)
    assert.equal("false|no CUDA driver: " .. NOLIB .. " not found (CUASYNC_CUDA_LIB)\n", out)
  end)

  it("finds the toolkit through one native search: NVRTC, cuBLAS and the include path", function()
    local ok, out = H.luajit([[
      local toolkit = require("cuasync.toolkit")
      print(table.concat(toolkit.cuda_includes(), ","))
      print(toolkit.nvrtc_identity():match("^%S+") ~= nil)
    ]], { CUDA_HOME = H.missing("toolkit") })
    assert.is_true(ok, out)
    -- a CUDA_HOME without the headers is passed over, and the next root in the one order is used
    local dirs = out:match("^([^\n]*)\n")
    assert.truthy(dirs:find("/include", 1, true), out)
    assert.is_nil(dirs:find(H.missing("toolkit"), 1, true), out)
    assert.truthy(out:find("\ntrue\n", 1, true), out)
  end)

  it("reports cuBLAS failures with their own status and no C-written prefix", function()
    local native = require("cuasync.native")
    require("cuasync.cdef.blas")
    local rc = native.C.cuasync_blas_gemm_bf16_tn(0, 0, 0, 1, 1, 1, native.errbuf, native.ERRLEN)
    if rc ~= 0 then
      assert.equal(native.C.CUASYNC_E_NOBLAS, rc)
      assert.is_nil(native.message():find("^cuasync"), native.message())
      local ok, err = pcall(native.check_as, "gemm.cublas", rc)
      assert.is_false(ok)
      assert.truthy(err:find("cuasync.gemm.cublas: ", 1, true), err)
    end
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
    ]], { CUASYNC_CUDA_LIB = NOLIB })
    assert.is_true(ok, out)
    -- named by the call, at the user's line
    local line = "cuasync.alloc: no CUDA driver: " .. NOLIB .. " not found (CUASYNC_CUDA_LIB)"
    local a, b = out:match("^[^\n]-:%d+: ([^\n]*)\n[^\n]-:%d+: ([^\n]*)\n$")
    assert.equal(line, a, out)
    assert.equal(line, b, out)
  end)

  it("compiles with no driver at all", function()
    local ok, out = H.luajit([[
      local c = require("cuasync")
      local m = c.program{ source = 'extern "C" __global__ void k(int *p) { *p = 1; }', arch = "sm_90a" }:compile()
      print(#m:cubin() > 0, m:ptx():find(".entry k", 1, true) ~= nil)
    ]], { CUASYNC_CUDA_LIB = NOLIB, CUASYNC_CACHE = "0" })
    assert.is_true(ok, out)
    assert.equal("true\ttrue\n", out)
  end)

  it("prints each loading attempt with CUASYNC_TRACE=1", function()
    local _, out = H.luajit([[ require("cuasync").available() ]],
      { CUASYNC_TRACE = "1", CUASYNC_CUDA_LIB = NOLIB })
    assert.truthy(out:find('cuasync: dlopen("' .. NOLIB .. '"):', 1, true), out)
  end)

  it("refuses an NVRTC override that cannot be loaded, without falling back", function()
    local ok, out = H.luajit([[
      local c = require("cuasync")
      local ok, err = pcall(function() c.program{ source = "", arch = "sm_90a" }:compile() end)
      print(err)
    ]], { CUASYNC_NVRTC = H.missing("libnvrtc.so"), CUASYNC_CACHE = "0" })
    assert.is_true(ok, out)
    assert.truthy(out:find("no NVRTC: " .. H.missing("libnvrtc.so") .. " could not be loaded (CUASYNC_NVRTC)", 1, true), out)
  end)

  it("checks the Lua and native versions against each other", function()
    local c = require("cuasync")
    local ffi = require("ffi")
    assert.equal(c.version, ffi.string(require("cuasync.native").C.cuasync_version()))
  end)
end)
