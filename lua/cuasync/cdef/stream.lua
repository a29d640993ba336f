-- Declarations of native/cuasync_stream.h for the FFI (spec/house/cdef_spec.lua keeps the two identical).
local ffi = require("ffi")
require("cuasync.cdef.core")

local declarations = [[
int cuasync_stream_create(CUstream *stream, int non_blocking, char *err, size_t errlen);
int cuasync_stream_destroy(CUstream stream, char *err, size_t errlen);
int cuasync_stream_synchronize(CUstream stream, const char *what, char *err, size_t errlen);
int cuasync_stream_query(CUstream stream, int *done, char *err, size_t errlen);
]]

ffi.cdef(declarations)
return declarations
