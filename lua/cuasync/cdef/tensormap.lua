-- Declarations of native/cuasync_tensormap.h for the FFI (spec/house/cdef_spec.lua keeps the two identical).
local ffi = require("ffi")
require("cuasync.cdef.core")

local declarations = [[
int cuasync_tensormap_encode_tiled(CUtensorMap *map, int dtype, unsigned rank, CUdeviceptr address,
                                   const unsigned long long *dims, const unsigned long long *strides,
                                   const unsigned *box, const unsigned *element_strides,
                                   int interleave, int swizzle, int l2_promotion, int oob_fill,
                                   char *err, size_t errlen);
int cuasync_tensormap_encode_im2col(CUtensorMap *map, int dtype, unsigned rank, CUdeviceptr address,
                                    const unsigned long long *dims, const unsigned long long *strides,
                                    const int *lower, const int *upper, unsigned channels, unsigned pixels,
                                    const unsigned *element_strides,
                                    int interleave, int swizzle, int l2_promotion, int oob_fill,
                                    char *err, size_t errlen);
int cuasync_tensormap_replace_address(CUtensorMap *map, CUdeviceptr address, char *err, size_t errlen);
]]

ffi.cdef(declarations)
return declarations
