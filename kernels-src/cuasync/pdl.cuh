// cuasync/pdl.cuh — programmatic dependent launch, device side. A kernel launched with
// programmatic = true (k:launch{ ..., programmatic = true }) may start while the grid before it on
// its stream still runs; it must call pdl::wait() before it reads what that grid writes. The grid
// before it calls pdl::launch_dependents() once the dependent may start its prologue (a block
// that never calls it counts as having called it when it exits). Compiled by NVRTC with no host
// headers.
#pragma once

#include <cuasync/arch.cuh>

namespace cuasync {
namespace pdl {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900

// griddepcontrol.launch_dependents;                                    // PTX ISA 7.8, sm_90
// This block lets the dependent grid launch (once every block of this grid has, or has exited).
// It does not make this grid's writes visible: the dependent's wait() does that.
__device__ __forceinline__ void launch_dependents()
{
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

// griddepcontrol.wait;                                                 // PTX ISA 7.8, sm_90
// Wait until the grids this one depends on have completed and their memory operations are
// visible. Returns at once in a grid launched without programmatic = true.
__device__ __forceinline__ void wait()
{
    asm volatile("griddepcontrol.wait;" ::: "memory");
}

#else
CUASYNC_REFUSE("pdl::", launch_dependents, CUASYNC_SM90)
CUASYNC_REFUSE("pdl::", wait, CUASYNC_SM90)
#endif

} // namespace pdl
} // namespace cuasync
