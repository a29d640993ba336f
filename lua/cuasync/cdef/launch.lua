-- Declarations of native/cuasync_launch.h for the FFI (spec/house/cdef_spec.lua keeps the two identical).
local ffi = require("ffi")
require("cuasync.cdef.core")

local declarations = [[
int cuasync_launch(CUfunction fn, const CUlaunchConfig *config, void **params, const char *name,
                   char *err, size_t errlen);
int cuasync_launch_max_active_clusters(CUfunction fn, const CUlaunchConfig *config, int *clusters,
                                       const char *name, char *err, size_t errlen);
int cuasync_launch_max_cluster_size(CUfunction fn, const CUlaunchConfig *config, int *size,
                                    const char *name, char *err, size_t errlen);
]]

ffi.cdef(declarations)
return declarations
