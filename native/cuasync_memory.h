/* cuasync_memory.h — device and pinned host memory, copies and memset. Sizes are in bytes. */
#ifndef CUASYNC_MEMORY_H
#define CUASYNC_MEMORY_H

#include "cuasync.h"

int cuasync_mem_alloc(CUdeviceptr *ptr, size_t bytes, char *err, size_t errlen);
int cuasync_mem_free(CUdeviceptr ptr, char *err, size_t errlen);
int cuasync_mem_alloc_host(void **ptr, size_t bytes, char *err, size_t errlen);
int cuasync_mem_free_host(void *ptr, char *err, size_t errlen);
/* Pinned host memory the device can read and write (cuMemHostAlloc DEVICEMAP): *host for the
 * CPU, *dev for kernels. Free it with cuasync_mem_free_host. */
int cuasync_mem_alloc_mapped(void **host, CUdeviceptr *dev, size_t bytes, char *err, size_t errlen);
int cuasync_mem_htod(CUdeviceptr dst, const void *src, size_t bytes, char *err, size_t errlen);
int cuasync_mem_dtoh(void *dst, CUdeviceptr src, size_t bytes, char *err, size_t errlen);
int cuasync_mem_dtod(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream,
                     char *err, size_t errlen);
int cuasync_mem_set8(CUdeviceptr dst, unsigned char value, size_t bytes, char *err, size_t errlen);
/* The same on a stream (the caller keeps host memory alive until the copy ran). */
int cuasync_mem_htod_async(CUdeviceptr dst, const void *src, size_t bytes, CUstream stream,
                           char *err, size_t errlen);
int cuasync_mem_dtoh_async(void *dst, CUdeviceptr src, size_t bytes, CUstream stream,
                           char *err, size_t errlen);
int cuasync_mem_set8_async(CUdeviceptr dst, unsigned char value, size_t bytes, CUstream stream,
                           char *err, size_t errlen);
/* dst (4-byte aligned) set to `words` copies of value, on a stream (the trace's per-launch epoch). */
int cuasync_mem_set32_async(CUdeviceptr dst, unsigned int value, size_t words, CUstream stream,
                            char *err, size_t errlen);

#endif
