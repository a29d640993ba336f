-- Declarations of native/cuasync_module.h for the FFI (spec/house/cdef_spec.lua keeps the two identical).
local ffi = require("ffi")
require("cuasync.cdef.core")

local declarations = [[
typedef struct cuasync_func_attrs {
    int regs;
    int static_smem;
    int const_bytes;
    int local_bytes;
    int max_threads;
    int max_dynamic_smem;
    int ptx_version;
    int binary_version;
    int cluster_size_must_be_set;
    int required_cluster[3];
    int non_portable_cluster_allowed;
} cuasync_func_attrs;
int cuasync_module_load(CUmodule *mod, const void *image, const char *what, char *err, size_t errlen);
int cuasync_module_unload(CUmodule mod, char *err, size_t errlen);
int cuasync_module_function(CUfunction *fn, CUmodule mod, const char *name, const char *what,
                            char *err, size_t errlen);
int cuasync_module_global(CUdeviceptr *ptr, size_t *bytes, CUmodule mod, const char *name, const char *what,
                          char *err, size_t errlen);
int cuasync_func_attributes(CUfunction fn, cuasync_func_attrs *out, const char *name,
                            char *err, size_t errlen);
int cuasync_func_set_attribute(CUfunction fn, int attrib, int value, const char *what,
                               char *err, size_t errlen);
int cuasync_func_params(CUfunction fn, int max, unsigned long long *offsets, unsigned long long *sizes,
                        int *count, const char *name, char *err, size_t errlen);
int cuasync_func_occupancy(CUfunction fn, int block_threads, size_t dynamic_smem, int *blocks,
                           const char *name, char *err, size_t errlen);
]]

ffi.cdef(declarations)
return declarations
