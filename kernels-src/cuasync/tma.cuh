// cuasync/tma.cuh — tensor copies (cp.async.bulk.tensor, the TMA unit with a tensor map) in tile
// mode, 1D to 5D. The tensor map is built on the host (cuasync.tensormap) and passed by value as
// a `const __grid_constant__ cuasync::tensormap` kernel parameter; its address is what the
// instructions take. Coordinates are element indices, innermost first; a box that hangs over
// the tensor's edge loads the map's OOB fill, and a store clips there. The shared-memory side
// must be 128-byte aligned (1024 for the 128B swizzle).
// Measured on the H200 (spec/core/tensor_edges_spec.lua): the innermost coordinate times the element
// size must be a multiple of 16 bytes, and a store's coordinates must not be negative (loads may
// start before the tensor); otherwise the launch fails with CUDA_ERROR_ILLEGAL_INSTRUCTION.
#pragma once

#include <cuasync/mbarrier.cuh>

namespace cuasync {

// The 128-byte opaque CUtensorMap, 64-byte aligned as a kernel parameter must be.
struct __align__(64) tensormap { unsigned long long opaque[16]; };

namespace tma {

// Where a map with the `span`-byte swizzle (0: none, 32, 64, 128) keeps the byte at `offset` of
// its box in shared memory (the box's rows `span` bytes wide): the 16-byte unit index XORed with
// the 128-byte line index, log2(span / 16) bits of each (model/swizzle.lua, checked against the
// hardware there). A kernel staging a tile for a swizzled store writes through it; the rows a
// warp writes at once then fall on different banks (a plain 128-byte-row layout puts eight rows on
// the same ones).
__device__ __forceinline__ unsigned swizzled(unsigned offset, unsigned span)
{
    return span < 32u ? offset : offset ^ ((offset >> 3) & (span - 16u));
}

#if __CUDA_ARCH__ >= 900

// Every wrapper below passes its operands in one order, so that one coordinate list serves all:
// %0 shared address, %1 mbarrier, %2 CTA mask, %3 tensor map, %4.. coordinates (c0 innermost).
#define CUASYNC_TMA_C1 "{%4}"
#define CUASYNC_TMA_C2 "{%4, %5}"
#define CUASYNC_TMA_C3 "{%4, %5, %6}"
#define CUASYNC_TMA_C4 "{%4, %5, %6, %7}"
#define CUASYNC_TMA_C5 "{%4, %5, %6, %7, %8}"

#define CUASYNC_TMA_OPS(saddr, baddr, mask, map, ...) \
    "r"(saddr), "r"(baddr), "h"(mask), "l"(map), __VA_ARGS__
#define CUASYNC_UNPAREN(...) __VA_ARGS__

#define CUASYNC_TMA_FAMILY(N, PARAMS, ...)                                                            \
    /* cp.async.bulk.tensor.Nd.shared::cluster.global.tile.mbarrier::complete_tx::bytes              \
           [dst], [map, {c..}], [mbar];                                     PTX ISA 8.0, sm_90 */    \
    __device__ __forceinline__ void load(void *smem_dst, const tensormap *map, mbarrier_t *bar, CUASYNC_UNPAREN PARAMS) \
    {                                                                                                 \
        asm volatile("cp.async.bulk.tensor." #N "d.shared::cluster.global.tile.mbarrier::complete_tx::bytes" \
                     " [%0], [%3, " CUASYNC_TMA_C##N "], [%1];"                                       \
                     :: CUASYNC_TMA_OPS(smem_addr(smem_dst), smem_addr(bar), (unsigned short)0, map, __VA_ARGS__) \
                     : "memory");                                                                     \
    }                                                                                                 \
    /* ... .multicast::cluster [dst], [map, {c..}], [mbar], cta_mask;      PTX ISA 8.0, sm_90a */    \
    __device__ __forceinline__ void load_multicast(void *smem_dst, const tensormap *map, mbarrier_t *bar, \
                                                   unsigned short cta_mask, CUASYNC_UNPAREN PARAMS)                   \
    {                                                                                                 \
        asm volatile("cp.async.bulk.tensor." #N "d.shared::cluster.global.tile.mbarrier::complete_tx::bytes" \
                     ".multicast::cluster [%0], [%3, " CUASYNC_TMA_C##N "], [%1], %2;"               \
                     :: CUASYNC_TMA_OPS(smem_addr(smem_dst), smem_addr(bar), cta_mask, map, __VA_ARGS__)       \
                     : "memory");                                                                     \
    }                                                                                                 \
    /* cp.async.bulk.tensor.Nd.global.shared::cta.tile.bulk_group [map, {c..}], [src];               \
                                                                            PTX ISA 8.0, sm_90 */    \
    __device__ __forceinline__ void store(const tensormap *map, const void *smem_src, CUASYNC_UNPAREN PARAMS)          \
    {                                                                                                 \
        asm volatile("cp.async.bulk.tensor." #N "d.global.shared::cta.tile.bulk_group"               \
                     " [%3, " CUASYNC_TMA_C##N "], [%0];"                                             \
                     :: CUASYNC_TMA_OPS(smem_addr(smem_src), 0u, (unsigned short)0, map, __VA_ARGS__)          \
                     : "memory");                                                                     \
    }                                                                                                 \
    /* cp.reduce.async.bulk.tensor.Nd.global.shared::cta.add.tile.bulk_group [map, {c..}], [src];    \
                                                                            PTX ISA 8.0, sm_90 */    \
    __device__ __forceinline__ void reduce_add(const tensormap *map, const void *smem_src, CUASYNC_UNPAREN PARAMS)     \
    {                                                                                                 \
        asm volatile("cp.reduce.async.bulk.tensor." #N "d.global.shared::cta.add.tile.bulk_group"    \
                     " [%3, " CUASYNC_TMA_C##N "], [%0];"                                             \
                     :: CUASYNC_TMA_OPS(smem_addr(smem_src), 0u, (unsigned short)0, map, __VA_ARGS__)          \
                     : "memory");                                                                     \
    }                                                                                                 \
    /* cp.async.bulk.prefetch.tensor.Nd.L2.global.tile [map, {c..}];       PTX ISA 8.0, sm_90 */     \
    __device__ __forceinline__ void prefetch(const tensormap *map, CUASYNC_UNPAREN PARAMS)                            \
    {                                                                                                 \
        asm volatile("cp.async.bulk.prefetch.tensor." #N "d.L2.global.tile [%3, " CUASYNC_TMA_C##N "];" \
                     :: CUASYNC_TMA_OPS(0u, 0u, (unsigned short)0, map, __VA_ARGS__)         \
                     : "memory");                                                                     \
    }

CUASYNC_TMA_FAMILY(1, (int c0), "r"(c0))
CUASYNC_TMA_FAMILY(2, (int c0, int c1), "r"(c0), "r"(c1))
CUASYNC_TMA_FAMILY(3, (int c0, int c1, int c2), "r"(c0), "r"(c1), "r"(c2))
CUASYNC_TMA_FAMILY(4, (int c0, int c1, int c2, int c3), "r"(c0), "r"(c1), "r"(c2), "r"(c3))
CUASYNC_TMA_FAMILY(5, (int c0, int c1, int c2, int c3, int c4), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4))

#undef CUASYNC_TMA_FAMILY
#undef CUASYNC_TMA_OPS
#undef CUASYNC_UNPAREN

// cp.async.bulk.tensor.Nd.shared::cluster.global.im2col.mbarrier::complete_tx::bytes
//     [dst], [map, {c..}], [mbar], {offsets};                            // PTX ISA 8.0, sm_90
// An im2col load (the map from cuasync.tensormap{..., im2col = {...}}): `pixels` pixels of
// `channels` channels each, starting at pixel (c1.., c_last) and walking the bounding box; the
// offsets (one per spatial dimension, 16-bit) shift where each pixel is read (the filter tap).
__device__ __forceinline__ void load_im2col(void *smem_dst, const tensormap *map, mbarrier_t *bar,
                                            int c0, int c1, int c2, unsigned short o0)
{
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
                 " [%0], [%2, {%3, %4, %5}], [%1], {%6};"
                 :: "r"(smem_addr(smem_dst)), "r"(smem_addr(bar)), "l"(map), "r"(c0), "r"(c1), "r"(c2), "h"(o0)
                 : "memory");
}
__device__ __forceinline__ void load_im2col(void *smem_dst, const tensormap *map, mbarrier_t *bar,
                                            int c0, int c1, int c2, int c3, unsigned short o0, unsigned short o1)
{
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
                 " [%0], [%2, {%3, %4, %5, %6}], [%1], {%7, %8};"
                 :: "r"(smem_addr(smem_dst)), "r"(smem_addr(bar)), "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3),
                    "h"(o0), "h"(o1)
                 : "memory");
}
__device__ __forceinline__ void load_im2col(void *smem_dst, const tensormap *map, mbarrier_t *bar,
                                            int c0, int c1, int c2, int c3, int c4,
                                            unsigned short o0, unsigned short o1, unsigned short o2)
{
    asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
                 " [%0], [%2, {%3, %4, %5, %6, %7}], [%1], {%8, %9, %10};"
                 :: "r"(smem_addr(smem_dst)), "r"(smem_addr(bar)), "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3),
                    "r"(c4), "h"(o0), "h"(o1), "h"(o2)
                 : "memory");
}

// prefetch.tensormap [map];                                            // PTX ISA 8.0, sm_90
// Fetch the descriptor itself ahead of the first copy that uses it.
__device__ __forceinline__ void prefetch_map(const tensormap *map)
{
    asm volatile("prefetch.tensormap [%0];" :: "l"(map) : "memory");
}

#else
// Tensor copies exist from sm_90 on: any use on an older target fails with this message.
CUASYNC_REFUSE("tma::", load, CUASYNC_SM90)
CUASYNC_REFUSE("tma::", load_multicast, CUASYNC_SM90)
CUASYNC_REFUSE("tma::", store, CUASYNC_SM90)
CUASYNC_REFUSE("tma::", reduce_add, CUASYNC_SM90)
CUASYNC_REFUSE("tma::", prefetch, CUASYNC_SM90)
CUASYNC_REFUSE("tma::", load_im2col, CUASYNC_SM90)
CUASYNC_REFUSE("tma::", prefetch_map, CUASYNC_SM90)
#endif

} // namespace tma
} // namespace cuasync
