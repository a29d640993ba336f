// cuasync/arch.cuh — what every device header needs from the target: the 32-bit shared-window
// address PTX's .shared operands take, and the stand-in that refuses an sm_90 wrapper by name on
// an older target. Compiled by NVRTC with no host headers.
#pragma once

// Where an sm_90 wrapper is used on an older target, its stand-in fails to compile with this
// message (a template, so only a use fires it, not the include).
#define CUASYNC_NEEDS_SM90(fn, ...) \
    template <typename cuasync_T = void> __device__ void fn(__VA_ARGS__) \
    { static_assert(sizeof(cuasync_T *) == 0, "cuasync: " #fn " needs sm_90 (PTX ISA 8.0)"); }

namespace cuasync {

// cvta.to.shared.u32 addr, p;   (what __cvta_generic_to_shared lowers to)  // PTX ISA 2.0, sm_20
__device__ __forceinline__ unsigned smem_addr(const void *p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

} // namespace cuasync
