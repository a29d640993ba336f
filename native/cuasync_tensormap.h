/* cuasync_tensormap.h — tensor maps for the TMA unit: tiled and im2col encodings, and moving a
 * map to a new address. The Lua side checks every rule first; a refusal the driver still returns is reported with every argument.
 * strides: rank - 1 byte strides (dimension 0 is packed); enums are the driver's values. */
#ifndef CUASYNC_TENSORMAP_H
#define CUASYNC_TENSORMAP_H

#include "cuasync.h"

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

#endif
