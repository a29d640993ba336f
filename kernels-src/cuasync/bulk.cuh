// cuasync/bulk.cuh — 1D bulk asynchronous copies (cp.async.bulk, the TMA unit without a tensor
// map). Addresses 16-byte aligned, sizes multiples of 16. Into shared memory completes on an
// mbarrier (complete_tx::bytes); out of shared memory completes through bulk groups.
#pragma once

#include <cuasync/mbarrier.cuh>

namespace cuasync {
namespace bulk {

#if __CUDA_ARCH__ >= 900

// cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [src], size, [mbar];
//                                                                      // PTX ISA 8.0, sm_90
// Global -> this block's shared memory; the copy's bytes complete_tx on bar, whose phase must
// have been told to expect them (mbarrier::arrive_expect_tx).
__device__ __forceinline__ void load(void *smem_dst, const void *gmem_src, unsigned bytes, mbarrier_t *bar)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 :: "r"(smem_addr(smem_dst)), "l"(gmem_src), "r"(bytes), "r"(smem_addr(bar)) : "memory");
}

// cp.async.bulk.global.shared::cta.bulk_group [dst], [src], size;      // PTX ISA 8.0, sm_90
// Shared -> global; completes with the bulk group it is committed in.
__device__ __forceinline__ void store(void *gmem_dst, const void *smem_src, unsigned bytes)
{
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"
                 :: "l"(gmem_dst), "r"(smem_addr(smem_src)), "r"(bytes) : "memory");
}

// cp.async.bulk.commit_group;                                          // PTX ISA 8.0, sm_90
__device__ __forceinline__ void commit_group()
{
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}

// cp.async.bulk.wait_group N;                                          // PTX ISA 8.0, sm_90
// Until at most N committed groups are pending: their writes to global memory are done.
template <int N>
__device__ __forceinline__ void wait_group()
{
    asm volatile("cp.async.bulk.wait_group %0;" :: "n"(N) : "memory");
}

// cp.async.bulk.wait_group.read N;                                     // PTX ISA 8.0, sm_90
// Until at most N groups still read their shared-memory source: the older sources may be reused.
template <int N>
__device__ __forceinline__ void wait_group_read()
{
    asm volatile("cp.async.bulk.wait_group.read %0;" :: "n"(N) : "memory");
}

// cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster
//     [dst], [src], size, [mbar], cta_mask;                             // PTX ISA 8.0, sm_90a
// One read of global memory lands at the same shared offset in every block of the cluster whose
// bit is set in cta_mask, and complete_tx's each of those blocks' barrier at the same offset.
__device__ __forceinline__ void load_multicast(void *smem_dst, const void *gmem_src, unsigned bytes,
                                               mbarrier_t *bar, unsigned short cta_mask)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1], %2, [%3], %4;"
                 :: "r"(smem_addr(smem_dst)), "l"(gmem_src), "r"(bytes), "r"(smem_addr(bar)), "h"(cta_mask)
                 : "memory");
}

// mapa.shared::cluster.u32 d, a, cta;                                  // PTX ISA 7.8, sm_90
// cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes
//     [dst], [src], size, [mbar];                                      // PTX ISA 8.0, sm_90
// This block's shared memory -> the same-offset buffer of block cta_rank in the cluster; the
// bytes complete_tx on that block's barrier (same offset as bar).
__device__ __forceinline__ void copy_to_cluster(void *smem_dst, const void *smem_src, unsigned bytes,
                                                mbarrier_t *bar, unsigned cta_rank)
{
    asm volatile("{\n\t.reg .b32 rdst, rbar;\n\t"
                 "mapa.shared::cluster.u32 rdst, %0, %3;\n\t"
                 "mapa.shared::cluster.u32 rbar, %2, %3;\n\t"
                 "cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [rdst], [%1], %4, [rbar];\n\t}"
                 :: "r"(smem_addr(smem_dst)), "r"(smem_addr(smem_src)), "r"(smem_addr(bar)), "r"(cta_rank), "r"(bytes)
                 : "memory");
}

// cp.async.bulk.prefetch.L2.global [src], size;                        // PTX ISA 8.0, sm_90
// A hint: bring size bytes (multiple of 16) into L2; nothing completes.
__device__ __forceinline__ void prefetch_l2(const void *gmem_src, unsigned bytes)
{
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" :: "l"(gmem_src), "r"(bytes) : "memory");
}

// cp.reduce.async.bulk.global.shared::cta.bulk_group.<op>.<type> [dst], [src], size;
//                                                                      // PTX ISA 8.0, sm_90
// dst[i] = op(dst[i], src[i]) element by element, performed atomically per element; completes
// with the bulk group it is committed in. The (op, type) pairs PTX allows are specialised below;
// any other fails to compile with the rule.
#define CUASYNC_REDUCE(op, T, ptxty)                                                               \
    __device__ __forceinline__ void reduce_##op(T *gmem_dst, const T *smem_src, unsigned bytes, T *) \
    {                                                                                              \
        asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group." #op "." ptxty " [%0], [%1], %2;" \
                     :: "l"(gmem_dst), "r"(smem_addr(smem_src)), "r"(bytes) : "memory");          \
    }
CUASYNC_REDUCE(add, unsigned, "u32")
CUASYNC_REDUCE(add, int, "s32")
CUASYNC_REDUCE(add, unsigned long long, "u64")
CUASYNC_REDUCE(add, float, "f32")
CUASYNC_REDUCE(add, double, "f64")
CUASYNC_REDUCE(min, unsigned, "u32")
CUASYNC_REDUCE(min, int, "s32")
CUASYNC_REDUCE(min, unsigned long long, "u64")
CUASYNC_REDUCE(min, long long, "s64")
CUASYNC_REDUCE(max, unsigned, "u32")
CUASYNC_REDUCE(max, int, "s32")
CUASYNC_REDUCE(max, unsigned long long, "u64")
CUASYNC_REDUCE(max, long long, "s64")
#undef CUASYNC_REDUCE
// The public spellings: reduce_add(dst, src, bytes) etc. A type without a matching overload
// above (add on s64, min on f32, ...) fails with "no matching function": PTX has no such form.
template <typename T> __device__ __forceinline__ void reduce_add(T *d, const T *s, unsigned n) { reduce_add(d, s, n, (T *)0); }
template <typename T> __device__ __forceinline__ void reduce_min(T *d, const T *s, unsigned n) { reduce_min(d, s, n, (T *)0); }
template <typename T> __device__ __forceinline__ void reduce_max(T *d, const T *s, unsigned n) { reduce_max(d, s, n, (T *)0); }

// elect.sync d|p, membermask;                                          // PTX ISA 8.0, sm_90
// True in exactly one active lane of the warp (the same lane for every caller of one call).
__device__ __forceinline__ bool elect_one()
{
    unsigned elected;
    asm volatile("{\n\t.reg .pred p;\n\t.reg .b32 lane;\n\t"
                 "elect.sync lane|p, 0xffffffff;\n\t"
                 "selp.u32 %0, 1, 0, p;\n\t}"
                 : "=r"(elected) :: "memory");
    return elected != 0;
}

// fence.proxy.async.shared::cta;                                       // PTX ISA 8.0, sm_90
// Orders this thread's generic-proxy writes to shared memory before later async-proxy reads of
// it (a bulk store of data threads wrote). Each writing thread fences, then the block syncs.
__device__ __forceinline__ void fence_proxy_async_shared()
{
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

#else
CUASYNC_REFUSE("", load, CUASYNC_SM90)
CUASYNC_REFUSE("", store, CUASYNC_SM90)
CUASYNC_REFUSE("", commit_group, CUASYNC_SM90)
CUASYNC_REFUSE("", fence_proxy_async_shared, CUASYNC_SM90)
CUASYNC_REFUSE("", load_multicast, CUASYNC_SM90)
CUASYNC_REFUSE("", copy_to_cluster, CUASYNC_SM90)
CUASYNC_REFUSE("", prefetch_l2, CUASYNC_SM90)
CUASYNC_REFUSE("", elect_one, CUASYNC_SM90)
CUASYNC_REFUSE("", reduce_add, CUASYNC_SM90)
CUASYNC_REFUSE("", reduce_min, CUASYNC_SM90)
CUASYNC_REFUSE("", reduce_max, CUASYNC_SM90)
CUASYNC_REFUSE_T(int N, "", wait_group, CUASYNC_SM90)
CUASYNC_REFUSE_T(int N, "", wait_group_read, CUASYNC_SM90)
#endif

} // namespace bulk
} // namespace cuasync
