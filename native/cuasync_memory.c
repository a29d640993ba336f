/* cuasync_memory.c — thin, checked wrappers: each failure names the call and the sizes involved. */
#define CUASYNC_INTERNAL
#include "cuasync_api.h"
#include "cuasync_error.h"
#include "cuasync_loader.h"
#include "cuasync_memory.h"


int cuasync_mem_alloc(CUdeviceptr *ptr, size_t bytes, char *err, size_t errlen)
{
    CUASYNC_READY(err, errlen);
    CUASYNC_CU(cuMemAlloc, (ptr, bytes), err, errlen, "allocating %zu bytes of device memory", bytes);
    return CUASYNC_OK;
}

int cuasync_mem_free(CUdeviceptr ptr, char *err, size_t errlen)
{
    CUASYNC_READY(err, errlen);
    CUASYNC_CU(cuMemFree, (ptr), err, errlen, "freeing device memory at 0x%llx", ptr);
    return CUASYNC_OK;
}

int cuasync_mem_alloc_host(void **ptr, size_t bytes, char *err, size_t errlen)
{
    CUASYNC_READY(err, errlen);
    CUASYNC_CU(cuMemAllocHost, (ptr, bytes), err, errlen, "allocating %zu bytes of pinned host memory",
               bytes);
    return CUASYNC_OK;
}

int cuasync_mem_alloc_mapped(void **host, CUdeviceptr *dev, size_t bytes, char *err, size_t errlen)
{
    int rc;
    CUASYNC_READY(err, errlen);
    /* CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP */
    CUASYNC_CU(cuMemHostAlloc, (host, bytes, 0x01u | 0x02u), err, errlen,
               "allocating %zu bytes of device-mapped pinned host memory", bytes);
    rc = cuasync_cu.cuMemHostGetDevicePointer(dev, *host, 0u);
    if (rc != 0) {
        cuasync_cu.cuMemFreeHost(*host);
        *host = NULL;
        return cuasync_fail_cu(err, errlen, "cuMemHostGetDevicePointer", (CUresult)rc,
                               "mapping %zu bytes of pinned host memory into the device", bytes);
    }
    return CUASYNC_OK;
}

int cuasync_mem_free_host(void *ptr, char *err, size_t errlen)
{
    CUASYNC_READY(err, errlen);
    CUASYNC_CU(cuMemFreeHost, (ptr), err, errlen, "freeing pinned host memory at %p", ptr);
    return CUASYNC_OK;
}

int cuasync_mem_htod(CUdeviceptr dst, const void *src, size_t bytes, char *err, size_t errlen)
{
    CUASYNC_READY(err, errlen);
    CUASYNC_CU(cuMemcpyHtoD, (dst, src, bytes), err, errlen,
               "copying %zu bytes from host %p to device 0x%llx", bytes, src, dst);
    return CUASYNC_OK;
}

int cuasync_mem_dtoh(void *dst, CUdeviceptr src, size_t bytes, char *err, size_t errlen)
{
    CUASYNC_READY(err, errlen);
    CUASYNC_CU(cuMemcpyDtoH, (dst, src, bytes), err, errlen,
               "copying %zu bytes from device 0x%llx to host %p", bytes, src, dst);
    return CUASYNC_OK;
}

int cuasync_mem_dtod(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream,
                     char *err, size_t errlen)
{
    CUASYNC_READY(err, errlen);
    CUASYNC_CU(cuMemcpyDtoDAsync, (dst, src, bytes, stream), err, errlen,
               "copying %zu bytes from device 0x%llx to device 0x%llx", bytes, src, dst);
    return CUASYNC_OK;
}

int cuasync_mem_set8(CUdeviceptr dst, unsigned char value, size_t bytes, char *err, size_t errlen)
{
    CUASYNC_READY(err, errlen);
    CUASYNC_CU(cuMemsetD8, (dst, value, bytes), err, errlen,
               "filling %zu bytes at device 0x%llx with 0x%02x", bytes, dst, value);
    return CUASYNC_OK;
}

/* The stream-ordered forms: enqueued on `stream` (captured into a graph while it captures). */
int cuasync_mem_htod_async(CUdeviceptr dst, const void *src, size_t bytes, CUstream stream,
                           char *err, size_t errlen)
{
    CUASYNC_READY(err, errlen);
    CUASYNC_CU(cuMemcpyHtoDAsync, (dst, src, bytes, stream), err, errlen,
               "copying %zu bytes from host %p to device 0x%llx on a stream", bytes, src, dst);
    return CUASYNC_OK;
}

int cuasync_mem_dtoh_async(void *dst, CUdeviceptr src, size_t bytes, CUstream stream,
                           char *err, size_t errlen)
{
    CUASYNC_READY(err, errlen);
    CUASYNC_CU(cuMemcpyDtoHAsync, (dst, src, bytes, stream), err, errlen,
               "copying %zu bytes from device 0x%llx to host %p on a stream", bytes, src, dst);
    return CUASYNC_OK;
}

int cuasync_mem_set8_async(CUdeviceptr dst, unsigned char value, size_t bytes, CUstream stream,
                           char *err, size_t errlen)
{
    CUASYNC_READY(err, errlen);
    CUASYNC_CU(cuMemsetD8Async, (dst, value, bytes, stream), err, errlen,
               "filling %zu bytes at device 0x%llx with 0x%02x on a stream", bytes, dst, value);
    return CUASYNC_OK;
}

int cuasync_mem_set32_async(CUdeviceptr dst, unsigned int value, size_t words, CUstream stream,
                            char *err, size_t errlen)
{
    CUASYNC_READY(err, errlen);
    CUASYNC_CU(cuMemsetD32Async, (dst, value, words, stream), err, errlen,
               "filling %zu 32-bit words at device 0x%llx with 0x%08x on a stream", words, dst, value);
    return CUASYNC_OK;
}
