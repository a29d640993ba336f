-- Declarations of native/cuasync_loader.h for the FFI (spec/house/cdef_spec.lua keeps the two identical).
local ffi = require("ffi")
require("cuasync.cdef.core")

local declarations = [[
int cuasync_driver_init(char *err, size_t errlen);
int cuasync_driver_version(int *version, char *err, size_t errlen);
void *cuasync_driver_symbol(const char *name);
]]

ffi.cdef(declarations)
return declarations
