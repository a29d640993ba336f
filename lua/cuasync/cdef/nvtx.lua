-- Declarations of native/cuasync_nvtx.h for the FFI (spec/house/cdef_spec.lua keeps the two identical).
local ffi = require("ffi")
require("cuasync.cdef.core")

local declarations = [[
int cuasync_nvtx_available(void);
int cuasync_nvtx_push(const char *name);
int cuasync_nvtx_pop(void);
]]

ffi.cdef(declarations)
return declarations
