-- Declarations of native/cuasync_error.h for the FFI (spec/house/cdef_spec.lua keeps the two identical).
local ffi = require("ffi")
require("cuasync.cdef.core")

local declarations = [[
const char *cuasync_cu_error_name(int status);
int cuasync_last_cu_status(void);
]]

ffi.cdef(declarations)
return declarations
