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

// fence.proxy.async.shared::cta;                                       // PTX ISA 8.0, sm_90
// Orders this thread's generic-proxy writes to shared memory before later async-proxy reads of
// it (a bulk store of data threads wrote). Each writing thread fences, then the block syncs.
__device__ __forceinline__ void fence_proxy_async_shared()
{
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

#else
CUASYNC_NEEDS_SM90(load, void *, const void *, unsigned, mbarrier_t *)
CUASYNC_NEEDS_SM90(store, void *, const void *, unsigned)
CUASYNC_NEEDS_SM90(commit_group)
CUASYNC_NEEDS_SM90(fence_proxy_async_shared)
template <int N> __device__ void wait_group() { static_assert(N != N, "cuasync: wait_group needs sm_90 (PTX ISA 8.0)"); }
template <int N> __device__ void wait_group_read() { static_assert(N != N, "cuasync: wait_group_read needs sm_90 (PTX ISA 8.0)"); }
#endif

} // namespace bulk
} // namespace cuasync
