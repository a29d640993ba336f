-- Declarations of native/cuasync_memory.h for the FFI (spec/house/cdef_spec.lua keeps the two identical).
local ffi = require("ffi")
require("cuasync.cdef.core")

local declarations = [[
int cuasync_mem_alloc(CUdeviceptr *ptr, size_t bytes, char *err, size_t errlen);
int cuasync_mem_free(CUdeviceptr ptr, char *err, size_t errlen);
int cuasync_mem_alloc_host(void **ptr, size_t bytes, char *err, size_t errlen);
int cuasync_mem_free_host(void *ptr, char *err, size_t errlen);
int cuasync_mem_alloc_mapped(void **host, CUdeviceptr *dev, size_t bytes, char *err, size_t errlen);
int cuasync_mem_htod(CUdeviceptr dst, const void *src, size_t bytes, char *err, size_t errlen);
int cuasync_mem_dtoh(void *dst, CUdeviceptr src, size_t bytes, char *err, size_t errlen);
int cuasync_mem_dtod(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream,
                     char *err, size_t errlen);
int cuasync_mem_set8(CUdeviceptr dst, unsigned char value, size_t bytes, char *err, size_t errlen);
int cuasync_mem_htod_async(CUdeviceptr dst, const void *src, size_t bytes, CUstream stream,
                           char *err, size_t errlen);
int cuasync_mem_dtoh_async(void *dst, CUdeviceptr src, size_t bytes, CUstream stream,
                           char *err, size_t errlen);
int cuasync_mem_set8_async(CUdeviceptr dst, unsigned char value, size_t bytes, CUstream stream,
                           char *err, size_t errlen);
int cuasync_mem_set32_async(CUdeviceptr dst, unsigned int value, size_t words, CUstream stream,
                            char *err, size_t errlen);
]]

ffi.cdef(declarations)
return declarations
