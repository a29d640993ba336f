-- Declarations of native/cuasync_toolkit.h for the FFI (spec/house/cdef_spec.lua keeps the two identical).
local ffi = require("ffi")
require("cuasync.cdef.core")

local declarations = [[
int cuasync_toolkit_include(char *out, size_t outlen, char *err, size_t errlen);
int cuasync_nvrtc_init(char *err, size_t errlen);
int cuasync_nvrtc_version(int *major, int *minor, char *err, size_t errlen);
int cuasync_nvrtc_identity(char *out, size_t outlen, char *err, size_t errlen);
const char *cuasync_nvrtc_path(void);
void *cuasync_blas_symbol(const char *name, char *err, size_t errlen);
]]

ffi.cdef(declarations)
return declarations
