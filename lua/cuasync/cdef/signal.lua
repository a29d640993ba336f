-- Declarations of native/cuasync_signal.h for the FFI (spec/house/cdef_spec.lua keeps the two identical).
local ffi = require("ffi")
require("cuasync.cdef.core")

local declarations = [[
int cuasync_interrupt_begin(void);
int cuasync_interrupt_count(void);
void cuasync_interrupt_end(void);
]]

ffi.cdef(declarations)
return declarations
