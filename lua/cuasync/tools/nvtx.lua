-- NVTX ranges (libcuasync's NVTX 3 wrapper): a sweep puts each variant's launches in a range
-- named by the sweep and its params, so that Nsight Systems shows the sweep's structure.
--   cuasync.nvtx.push("name") ... cuasync.nvtx.pop();  cuasync.nvtx.range("name", fn, ...)
-- Without a profiler (no NVTX_INJECTION64_PATH) each call returns at once; a library built
-- without the NVTX headers says so in enabled() == false, why().
local native = require("cuasync.native")
local util = require("cuasync.util")
require("cuasync.cdef.nvtx")

local C = native.C
local M = {}
local on = C.cuasync_nvtx_available() == 1

function M.enabled() return on end
function M.why()
  return on and nil or "libcuasync was built without the NVTX 3 headers (CUDA_HOME/include/nvtx3): ranges are off"
end
function M.push(name)
  if on then C.cuasync_nvtx_push(name) end
end
function M.pop()
  if on then C.cuasync_nvtx_pop() end
end
-- fn(...) inside a range; the range ends even when fn raises.
function M.range(name, fn, ...)
  util.cstring("nvtx.range", "name", name)
  util.kind("nvtx.range", "fn", fn, "function")
  M.push(name)
  local r = { pcall(fn, ...) }
  M.pop()
  if not r[1] then error(r[2], 0) end
  return unpack(r, 2)
end
return M
