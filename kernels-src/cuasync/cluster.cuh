// cuasync/cluster.cuh — thread-block clusters: where this block sits in its cluster, and the
// cluster-wide barrier. (The distributed-shared-memory tools build on these.)
#pragma once

#include <cuasync/mbarrier.cuh>   // CUASYNC_NEEDS_SM90

namespace cuasync {
namespace cluster {

#if __CUDA_ARCH__ >= 900
// mov.u32 r, %cluster_ctarank;                                        // PTX ISA 7.8, sm_90
__device__ __forceinline__ unsigned rank()
{
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}

// mov.u32 r, %cluster_nctarank;                                       // PTX ISA 7.8, sm_90
__device__ __forceinline__ unsigned size()
{
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(r));
    return r;
}

// barrier.cluster.arrive.release; barrier.cluster.wait.acquire;       // PTX ISA 8.0, sm_90
// Every thread of every block of the cluster; orders shared-memory writes (barrier inits
// included) before any block of the cluster reads them or copies into them.
__device__ __forceinline__ void sync()
{
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
#else
CUASYNC_NEEDS_SM90(rank)
CUASYNC_NEEDS_SM90(size)
CUASYNC_NEEDS_SM90(sync)
#endif

} // namespace cluster
} // namespace cuasync
