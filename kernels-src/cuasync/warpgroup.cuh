// cuasync/warpgroup.cuh — a warpgroup as a named group (ThunderKittens' group.cuh): 4 consecutive
// warps, 128 threads, starting at a warp index divisible by 4. Its own barrier (a named barrier,
// so one warpgroup syncs without the others) and the register moves between warpgroups
// (setmaxnreg). Kernels call these instead of writing PTX. Compiled by NVRTC with no host headers.
#pragma once

#include <cuasync/arch.cuh>

namespace cuasync {
namespace warpgroup {

constexpr unsigned threads = 128;

// Which warpgroup of the block this thread is in.
__device__ __forceinline__ unsigned index() { return threadIdx.x / threads; }

// bar.sync id, 128;                                                     // PTX ISA 2.0, sm_20
// The 128 threads of this warpgroup wait for each other on named barrier `id` (1..15: 0 is
// __syncthreads). Every thread of the warpgroup calls it with the same id, and no other thread.
__device__ __forceinline__ void sync(unsigned id)
{
    asm volatile("bar.sync %0, 128;" :: "r"(id) : "memory");
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)

// setmaxnreg.inc.sync.aligned.u32 R;                                 // PTX ISA 8.0, sm_90a
// Every thread of a warpgroup: raise (consumers) its register count to R (a multiple of 8 in
// 24..256), so that a block's registers go where the accumulators are. Takes effect only under a
// register cap at entry (__launch_bounds__(threads, 1)); an increase waits for registers other
// warpgroups released: asking for more than they gave hangs.
template <int R>
__device__ __forceinline__ void setmaxnreg_inc() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" :: "n"(R)); }
// setmaxnreg.dec.sync.aligned.u32 R;                                 // PTX ISA 8.0, sm_90a
// Every thread of a warpgroup: lower (a producer) its register count to R, releasing the rest
// to the warpgroups that raise theirs.
template <int R>
__device__ __forceinline__ void setmaxnreg_dec() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" :: "n"(R)); }

#else
CUASYNC_REFUSE_T(int R, "warpgroup::", setmaxnreg_inc, CUASYNC_SM90A)
CUASYNC_REFUSE_T(int R, "warpgroup::", setmaxnreg_dec, CUASYNC_SM90A)
#endif

} // namespace warpgroup
} // namespace cuasync
