-- Declarations of native/cuasync_nvml.h for the FFI (spec/house/cdef_spec.lua keeps the two identical).
local ffi = require("ffi")
require("cuasync.cdef.core")

local declarations = [[
enum {
    CUASYNC_COND_SM = 0,
    CUASYNC_COND_MEM = 1,
    CUASYNC_COND_POWER = 2,
    CUASYNC_COND_TEMP = 3,
    CUASYNC_COND_REASONS = 4,
    CUASYNC_COND_POWER_LIMIT = 5,
    CUASYNC_COND_MAX_SM = 6,
    CUASYNC_COND_MAX_MEM = 7,
    CUASYNC_COND_FIELDS = 8
};
typedef struct cuasync_conditions {
    unsigned int have;
    unsigned int sm_mhz;
    unsigned int mem_mhz;
    unsigned int power_mw;
    unsigned int temp_c;
    unsigned long long reasons;
    unsigned int power_limit_mw;
    unsigned int max_sm_mhz;
    unsigned int max_mem_mhz;
    int status[8];
    char why[8][160];
} cuasync_conditions;
const char *cuasync_nvml_field_name(int i);
int cuasync_nvml_init(char *err, size_t errlen);
int cuasync_nvml_sample(const char *pci_bus_id, int index, cuasync_conditions *out, char *err, size_t errlen);
]]

ffi.cdef(declarations)
return declarations
