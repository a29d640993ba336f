/* cuasync_tensormap.c — cuTensorMapEncodeTiled / EncodeIm2col / ReplaceAddress, with every
 * argument in the failure message (the driver answers any bad one with a bare
 * CUDA_ERROR_INVALID_VALUE). */
#define CUASYNC_INTERNAL
#include <stdio.h>

#include "cuasync_api.h"
#include "cuasync_error.h"
#include "cuasync_loader.h"
#include "cuasync_tensormap.h"


/* "{a, b, c}" of n (at most 5) values into buf. The Lua side has bounded every value (dims
 * <= 2^32, strides < 2^40, corners 16-bit), so a signed 64-bit print shows each exactly. */
static void list(char *buf, size_t len, const long long *v, unsigned n)
{
    size_t at = 0;
    at += (size_t)snprintf(buf + at, len - at, "{");
    for (unsigned i = 0; i < n && i < 5 && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s%lld", i ? ", " : "", v[i]);
    if (at < len) snprintf(buf + at, len - at, "}");
}

#define LIST_OF(name, type)                                                      \
    static void name(char *buf, size_t len, const type *v, unsigned n)           \
    {                                                                            \
        long long w[5] = { 0 };                                                    \
        for (unsigned i = 0; i < n && i < 5; i++) w[i] = (long long)v[i];        \
        list(buf, len, w, n);                                                    \
    }
LIST_OF(list_u64, unsigned long long)
LIST_OF(list_u32, unsigned)
LIST_OF(list_i32, int)
#undef LIST_OF

int cuasync_tensormap_encode_tiled(CUtensorMap *map, int dtype, unsigned rank, CUdeviceptr address,
                                   const unsigned long long *dims, const unsigned long long *strides,
                                   const unsigned *box, const unsigned *element_strides,
                                   int interleave, int swizzle, int l2_promotion, int oob_fill,
                                   char *err, size_t errlen)
{
    char d[128], s[128], b[96], e[64];
    CUASYNC_READY(err, errlen);
    if (rank < 1 || rank > 5)
        return cuasync_fail(err, errlen, CUASYNC_E_INVALID, "cuasync_tensormap_encode_tiled: rank %u is not 1..5", rank);
    list_u64(d, sizeof d, dims, rank);
    list_u64(s, sizeof s, strides, rank - 1);
    list_u32(b, sizeof b, box, rank);
    list_u32(e, sizeof e, element_strides, rank);
    CUASYNC_CU(cuTensorMapEncodeTiled, (map, dtype, rank, (void *)(size_t)address, dims, strides, box,
                                        element_strides, interleave, swizzle, l2_promotion, oob_fill),
               err, errlen,
               "encoding a tiled tensor map (dtype %d, rank %u, address 0x%llx, dims %s, strides %s bytes, "
               "box %s, element strides %s, interleave %d, swizzle %d, l2 promotion %d, oob fill %d)",
               dtype, rank, address, d, s, b, e, interleave, swizzle, l2_promotion, oob_fill);
    return CUASYNC_OK;
}

int cuasync_tensormap_encode_im2col(CUtensorMap *map, int dtype, unsigned rank, CUdeviceptr address,
                                    const unsigned long long *dims, const unsigned long long *strides,
                                    const int *lower, const int *upper, unsigned channels, unsigned pixels,
                                    const unsigned *element_strides,
                                    int interleave, int swizzle, int l2_promotion, int oob_fill,
                                    char *err, size_t errlen)
{
    char d[128], s[128], lo[64], up[64], e[64];
    CUASYNC_READY(err, errlen);
    if (rank < 3 || rank > 5)
        return cuasync_fail(err, errlen, CUASYNC_E_INVALID, "cuasync_tensormap_encode_im2col: rank %u is not 3..5", rank);
    list_u64(d, sizeof d, dims, rank);
    list_u64(s, sizeof s, strides, rank - 1);
    list_i32(lo, sizeof lo, lower, rank - 2);
    list_i32(up, sizeof up, upper, rank - 2);
    list_u32(e, sizeof e, element_strides, rank);
    CUASYNC_CU(cuTensorMapEncodeIm2col, (map, dtype, rank, (void *)(size_t)address, dims, strides, lower, upper,
                                         channels, pixels, element_strides, interleave, swizzle, l2_promotion,
                                         oob_fill),
               err, errlen,
               "encoding an im2col tensor map (dtype %d, rank %u, address 0x%llx, dims %s, strides %s bytes, "
               "lower corner %s, upper corner %s, channels per pixel %u, pixels per column %u, element strides %s, "
               "interleave %d, swizzle %d, l2 promotion %d, oob fill %d)",
               dtype, rank, address, d, s, lo, up, channels, pixels, e, interleave, swizzle, l2_promotion, oob_fill);
    return CUASYNC_OK;
}

int cuasync_tensormap_replace_address(CUtensorMap *map, CUdeviceptr address, char *err, size_t errlen)
{
    CUASYNC_READY(err, errlen);
    CUASYNC_CU(cuTensorMapReplaceAddress, (map, (void *)(size_t)address), err, errlen,
               "moving a tensor map to address 0x%llx", address);
    return CUASYNC_OK;
}
