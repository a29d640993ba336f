-- Declarations of native/cuasync_blas.h for the FFI (spec/house/cdef_spec.lua keeps the two identical).
local ffi = require("ffi")
require("cuasync.cdef.core")

local declarations = [[
int cuasync_blas_gemm_bf16_tn(unsigned long long a, unsigned long long b, unsigned long long c, int m, int n, int k,
                              char *err, size_t errlen);
int cuasync_blas_gemm_bf16_tn_bf16(unsigned long long a, unsigned long long b, unsigned long long c, int m, int n, int k,
                                   char *err, size_t errlen);
]]

ffi.cdef(declarations)
return declarations
