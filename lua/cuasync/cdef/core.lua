-- Declarations of native/cuasync.h for the FFI (spec/house/cdef_spec.lua keeps the two identical).
local ffi = require("ffi")
require("cuasync.cdef.types")

local declarations = [[
enum {
    CUASYNC_OK = 0,
    CUASYNC_E_NODRIVER = 1,
    CUASYNC_E_DRIVER = 2,
    CUASYNC_E_NONVRTC = 3,
    CUASYNC_E_NVRTC = 4,
    CUASYNC_E_COMPILE = 5,
    CUASYNC_E_INVALID = 6,
    CUASYNC_E_NOMEM = 7,
    CUASYNC_E_IO = 8,
    CUASYNC_E_MISSING = 9,
    CUASYNC_E_NOBLAS = 10,
    CUASYNC_E_NONVML = 11,
    CUASYNC_E_NVML = 12
};
const char *cuasync_version(void);
int cuasync_abi(void);
]]

ffi.cdef(declarations)
return declarations
