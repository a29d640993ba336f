-- Declarations of native/cuasync_device.h for the FFI (spec/house/cdef_spec.lua keeps the two identical).
local ffi = require("ffi")
require("cuasync.cdef.core")

local declarations = [[
typedef struct cuasync_device_info {
    int ordinal;
    char name[256];
    unsigned long long total_mem;
    int count;
    int value[64];
} cuasync_device_info;
int cuasync_device_prop_count(void);
const char *cuasync_device_prop_name(int i);
int cuasync_device_count(int *count, char *err, size_t errlen);
int cuasync_device_open(int ordinal, cuasync_device_info *info, char *err, size_t errlen);
int cuasync_device_activate(int ordinal, char *err, size_t errlen);
int cuasync_device_synchronize(const char *what, char *err, size_t errlen);
int cuasync_device_reset(int ordinal, char *err, size_t errlen);
int cuasync_device_pci_bus_id(int ordinal, char *out, size_t outlen, char *err, size_t errlen);
int cuasync_device_mem_info(size_t *free_bytes, size_t *total_bytes, char *err, size_t errlen);
]]

ffi.cdef(declarations)
return declarations
