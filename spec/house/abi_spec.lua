-- The struct layouts the FFI shares with the driver, checked three ways: the toolkit's cuda.h
-- (compiled here with cc), native/cuasync_types.h (what libcuasync was built with), and LuaJIT's
-- ffi.sizeof/ffi.offsetof of the cdef.
local ffi = require("ffi")
require("cuasync")

local cuda_home = os.getenv("CUDA_HOME") or "/usr/local/cuda"
local have_cuda_h = io.open(cuda_home .. "/include/cuda.h") ~= nil

local FIELDS = {
  { "CUlaunchConfig", nil }, { "CUlaunchConfig", "gridDimX" }, { "CUlaunchConfig", "blockDimZ" },
  { "CUlaunchConfig", "sharedMemBytes" }, { "CUlaunchConfig", "hStream" }, { "CUlaunchConfig", "attrs" },
  { "CUlaunchConfig", "numAttrs" },
  { "CUlaunchAttribute", nil }, { "CUlaunchAttribute", "id" }, { "CUlaunchAttribute", "value" },
  { "CUlaunchAttributeValue", nil }, { "CUlaunchAttributeValue", "clusterDim" },
  { "CUlaunchAttributeValue", "clusterSchedulingPolicyPreference" },
  { "CUlaunchAttributeValue", "programmaticStreamSerializationAllowed" },
  { "CUgraphExecUpdateResultInfo", nil }, { "CUgraphExecUpdateResultInfo", "result" },
  { "CUgraphExecUpdateResultInfo", "errorNode" }, { "CUgraphExecUpdateResultInfo", "errorFromNode" },
  { "CUgraphEdgeData", nil }, { "CUgraphEdgeData", "from_port" }, { "CUgraphEdgeData", "to_port" },
  { "CUgraphEdgeData", "type" },
  { "CUtensorMap", nil },
}

local function program(include)
  local lines = { "#include <stdio.h>", "#include <stddef.h>", include, "int main(void) {" }
  for _, f in ipairs(FIELDS) do
    if f[2] then
      lines[#lines + 1] = ('printf("%s.%s %%zu\\n", offsetof(%s, %s));'):format(f[1], f[2], f[1], f[2])
    else
      lines[#lines + 1] = ('printf("%s %%zu %%zu\\n", sizeof(%s), _Alignof(%s));'):format(f[1], f[1], f[1])
    end
  end
  lines[#lines + 1] = "return 0; }"
  return table.concat(lines, "\n")
end

local function run_c(src, flags)
  local base = os.tmpname()
  local f = assert(io.open(base .. ".c", "w"))
  f:write(src)
  f:close()
  local cmd = ("cc -std=c11 %s -o %s %s.c 2>&1 && %s"):format(flags, base, base, base)
  local p = io.popen(cmd)
  local out = p:read("*a")
  p:close()
  os.remove(base .. ".c"); os.remove(base)
  local t = {}
  for k, v in out:gmatch("(%S+) ([%d ]+)\n") do t[k] = v end
  return t, out
end

local function lua_side()
  local t = {}
  for _, f in ipairs(FIELDS) do
    if f[2] then
      t[f[1] .. "." .. f[2]] = tostring(ffi.offsetof(f[1], f[2]))
    else
      t[f[1]] = ("%d %d"):format(ffi.sizeof(f[1]), ffi.alignof(f[1]))
    end
  end
  return t
end

describe("ABI", function()
  local pending_ = pending
  local it_cuda = have_cuda_h and it or function(name) pending_(name .. " [skipped: no " .. cuda_home .. "/include/cuda.h]") end

  it_cuda("CUlaunchConfig, CUlaunchAttribute and CUtensorMap match the toolkit's cuda.h", function()
    local real, out = run_c(program("#include <cuda.h>"), "-I" .. cuda_home .. "/include")
    assert.is_not_nil(real.CUtensorMap, out)
    local mine = lua_side()
    for k, v in pairs(real) do assert.equal(v, mine[k], k) end
    assert.equal(128, tonumber(real.CUtensorMap:match("^(%d+)")))
  end)

  it("native/cuasync_types.h has the layout the FFI uses", function()
    local native, out = run_c(program('#include "cuasync_types.h"'), "-Inative")
    assert.is_not_nil(native.CUlaunchConfig, out)
    local mine = lua_side()
    for k, v in pairs(native) do assert.equal(v, mine[k], k) end
  end)

  -- native/cuasync_device.c lists each property once: { number, "name" }, /* CU_DEVICE_ATTRIBUTE_ suffix */
  it_cuda("every device property's attribute number is cuda.h's, and Lua sees every name once", function()
    local f = assert(io.open("native/cuasync_device.c"))
    local text = f:read("*a")
    f:close()
    local lines, want = { "#include <stdio.h>", "#include <cuda.h>", "int main(void) {" }, {}
    for num, name, attr in text:gmatch('{ (%d+), "([%w_]+)" },%s*/%* ([%u%d_]+)') do
      lines[#lines + 1] = ('printf("%s %%d\\n", (int)CU_DEVICE_ATTRIBUTE_%s);'):format(name, attr)
      want[#want + 1] = { name, num }
    end
    lines[#lines + 1] = "return 0; }"
    local real, out = run_c(table.concat(lines, "\n"), "-I" .. cuda_home .. "/include")
    local C = require("cuasync.native").C
    assert.equal(C.cuasync_device_prop_count(), #want, "a property line the pattern does not read")
    for i, w in ipairs(want) do
      assert.equal(w[2], real[w[1]], w[1] .. ": " .. out)
      assert.equal(w[1], ffi.string(C.cuasync_device_prop_name(i - 1)))
    end
    assert.is_true(C.cuasync_device_prop_name(#want) == nil)
    assert.is_true(#want <= ffi.sizeof(ffi.new("cuasync_device_info").value) / 4)
  end)

  -- the graph-node structs only libcuasync fills (cuasync_types.h, under CUASYNC_INTERNAL)
  local NODE_FIELDS = {
    { "CUDA_KERNEL_NODE_PARAMS", nil }, { "CUDA_KERNEL_NODE_PARAMS", "sharedMemBytes" },
    { "CUDA_KERNEL_NODE_PARAMS", "kernelParams" }, { "CUDA_KERNEL_NODE_PARAMS", "ctx" },
    { "CUDA_MEMSET_NODE_PARAMS", nil }, { "CUDA_MEMSET_NODE_PARAMS", "value" }, { "CUDA_MEMSET_NODE_PARAMS", "height" },
    { "CUDA_MEMCPY3D", nil }, { "CUDA_MEMCPY3D", "srcMemoryType" }, { "CUDA_MEMCPY3D", "srcDevice" },
    { "CUDA_MEMCPY3D", "dstMemoryType" }, { "CUDA_MEMCPY3D", "dstHost" }, { "CUDA_MEMCPY3D", "WidthInBytes" },
    { "CUDA_MEMCPY3D", "Depth" },
    { "CUDA_CONDITIONAL_NODE_PARAMS", nil }, { "CUDA_CONDITIONAL_NODE_PARAMS", "type" },
    { "CUDA_CONDITIONAL_NODE_PARAMS", "phGraph_out" }, { "CUDA_CONDITIONAL_NODE_PARAMS", "ctx" },
    { "CUgraphNodeParams", nil },
  }
  local function node_program(include, union)
    local lines = { "#include <stdio.h>", "#include <stddef.h>", include, "int main(void) {" }
    for _, f in ipairs(NODE_FIELDS) do
      if f[2] then
        lines[#lines + 1] = ('printf("%s.%s %%zu\\n", offsetof(%s, %s));'):format(f[1], f[2], f[1], f[2])
      else
        lines[#lines + 1] = ('printf("%s %%zu %%zu\\n", sizeof(%s), _Alignof(%s));'):format(f[1], f[1], f[1])
      end
    end
    lines[#lines + 1] = ('printf("conditional %%zu\\n", offsetof(CUgraphNodeParams, %s));'):format(union)
    lines[#lines + 1] = "return 0; }"
    return table.concat(lines, "\n")
  end

  it_cuda("the graph-node structs libcuasync fills match the toolkit's cuda.h", function()
    local real, out = run_c(node_program("#include <cuda.h>", "conditional"), "-I" .. cuda_home .. "/include")
    assert.is_not_nil(real.CUgraphNodeParams, out)
    local mine, out2 = run_c(node_program('#define CUASYNC_INTERNAL\n#include "cuasync_types.h"', "u.conditional"), "-Inative")
    assert.is_not_nil(mine.CUgraphNodeParams, out2)
    for k, v in pairs(real) do assert.equal(v, mine[k], k) end
    assert.equal("256 8", real.CUgraphNodeParams)
  end)

  it("cuasync_device_info and cuasync_func_attrs match the native build", function()
    local src = [[
#include <stdio.h>
#include <stddef.h>
#include "cuasync_device.h"
#include "cuasync_module.h"
int main(void) {
  printf("props %zu %zu %zu %zu %d\n", sizeof(cuasync_device_info), offsetof(cuasync_device_info, total_mem),
         offsetof(cuasync_device_info, count), offsetof(cuasync_device_info, value), CUASYNC_DEVICE_MAX_PROPS);
  printf("attrs %zu %zu\n", sizeof(cuasync_func_attrs), offsetof(cuasync_func_attrs, required_cluster));
  return 0; }
]]
    local t, out = run_c(src, "-Inative")
    assert.equal(("%d %d %d %d %d"):format(ffi.sizeof("cuasync_device_info"), ffi.offsetof("cuasync_device_info", "total_mem"),
      ffi.offsetof("cuasync_device_info", "count"), ffi.offsetof("cuasync_device_info", "value"),
      ffi.sizeof(ffi.new("cuasync_device_info").value) / 4), t.props, out)
    assert.equal(("%d %d"):format(ffi.sizeof("cuasync_func_attrs"), ffi.offsetof("cuasync_func_attrs", "required_cluster")), t.attrs, out)
  end)
end)

-- The watchdog record is written by the device (cuasync::watchdog::record in watchdog.cuh) and
-- read here through the cdef in watchdog.lua. The struct's text is taken from the header and
-- compiled by the host C compiler (NVRTC does not fold offsetof into a constant), field by field.
describe("abi of the watchdog record", function()
  it("the device struct has the FFI's layout, field by field", function()
    local ffi = require("ffi")
    require("cuasync.watchdog")   -- declares cuasync_watchdog_record
    local h = assert(io.open("kernels-src/cuasync/watchdog.cuh"))
    local header = h:read("*a")
    h:close()
    local body = assert(header:match("struct record (%b{});"), "watchdog.cuh has no struct record")
    local fields = {}
    for name in body:gsub("//[^\n]*", ""):gmatch("([%a_][%w_]*)%s*[%[;,]") do
      if name ~= "unsigned" and name ~= "long" then fields[#fields + 1] = name end
    end
    assert.is_true(#fields >= 17, table.concat(fields, " "))
    local lines = { "#include <stddef.h>", "#include <stdio.h>", "struct record " .. body .. ";", "int main(void) {" }
    for _, f in ipairs(fields) do
      lines[#lines + 1] = ('printf("%s %%zu\\n", offsetof(struct record, %s));'):format(f, f)
    end
    lines[#lines + 1] = 'printf("sizeof %zu\\n", sizeof(struct record)); return 0; }'
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir) == 0)
    local c = io.open(dir .. "/r.c", "w")
    c:write(table.concat(lines, "\n"))
    c:close()
    assert.equal(0, os.execute(("cc -o %s/r %s/r.c"):format(dir, dir)))
    local p = io.popen(dir .. "/r")
    local got = p:read("*a")
    p:close()
    os.execute("rm -rf " .. dir)
    local want = {}
    for _, f in ipairs(fields) do
      want[#want + 1] = ("%s %d"):format(f, ffi.offsetof("cuasync_watchdog_record", f))
    end
    want[#want + 1] = ("sizeof %d"):format(ffi.sizeof("cuasync_watchdog_record"))
    assert.equal(table.concat(want, "\n") .. "\n", got)
  end)
end)
