-- Declarations of native/cuasync_signal.h for the FFI (spec/house/cdef_spec.lua keeps the two identical).
local ffi = require("ffi")
require("cuasync.cdef.core")

local declarations = [[
typedef struct cuasync_stop_file {
    const char *path;
    int fd;
    const char *data;
    size_t len;
} cuasync_stop_file;
int cuasync_interrupt_begin(void);
int cuasync_interrupt_count(void);
void cuasync_interrupt_end(void);
void cuasync_interrupt_inside(const char *label);
int cuasync_interrupt_keep(const cuasync_stop_file *files, int n);
]]

ffi.cdef(declarations)
return declarations
