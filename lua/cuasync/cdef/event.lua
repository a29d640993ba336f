-- Declarations of native/cuasync_event.h for the FFI (spec/house/cdef_spec.lua keeps the two identical).
local ffi = require("ffi")
require("cuasync.cdef.core")

local declarations = [[
int cuasync_event_create(CUevent *event, char *err, size_t errlen);
int cuasync_event_destroy(CUevent event, char *err, size_t errlen);
int cuasync_event_record(CUevent event, CUstream stream, char *err, size_t errlen);
int cuasync_event_synchronize(CUevent event, char *err, size_t errlen);
int cuasync_event_query(CUevent event, int *done, char *err, size_t errlen);
int cuasync_event_elapsed(float *ms, CUevent start, CUevent end, char *err, size_t errlen);
double cuasync_now_ns(void);
]]

ffi.cdef(declarations)
return declarations
