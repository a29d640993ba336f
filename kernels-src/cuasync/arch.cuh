// cuasync/arch.cuh — what every device header needs from the target: the 32-bit shared-window
// address PTX's .shared operands take, and the stand-in that refuses an sm_90 wrapper by name on
// an older target (CUASYNC_REFUSE). Compiled by NVRTC with no host headers.
#pragma once

namespace cuasync {
// false, and dependent on a stand-in's arguments: its static_assert fires on use, not on include.
template <typename... T> struct refused { static constexpr bool value = false; };
}

// The one refusal of an arch-gated wrapper. On a target without it, the wrapper is a stand-in of
// the same name that fails to compile, when used, with "cuasync: <prefix><fn> needs <target>".
// CUASYNC_REFUSE_T is the same for a wrapper with a template parameter (template <int N> ...).
// A header none of whose wrappers exist below a target refuses at include: CUASYNC_REFUSE_HEADER.
#define CUASYNC_SM90 "sm_90 (PTX ISA 8.0)"
#define CUASYNC_SM90A "sm_90a (compile with arch = \"sm_90a\")"
#define CUASYNC_REFUSE(prefix, fn, target) \
    template <typename... cuasync_A> __device__ void fn(cuasync_A...) \
    { static_assert(::cuasync::refused<cuasync_A...>::value, "cuasync: " prefix #fn " needs " target); }
#define CUASYNC_REFUSE_T(tparam, prefix, fn, target) \
    template <tparam, typename... cuasync_A> __device__ void fn(cuasync_A...) \
    { static_assert(::cuasync::refused<cuasync_A...>::value, "cuasync: " prefix #fn " needs " target); }
#define CUASYNC_REFUSE_HEADER(header, target) \
    static_assert(::cuasync::refused<>::value, "cuasync: " header " needs " target)

namespace cuasync {

// cvta.to.shared.u32 addr, p;   (what __cvta_generic_to_shared lowers to)  // PTX ISA 2.0, sm_20
__device__ __forceinline__ unsigned smem_addr(const void *p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// mov.u32 r, %smid;                                                      // PTX ISA 1.3, sm_10
// The SM this thread runs on (for traces: which SMs a grid's blocks landed on).
__device__ __forceinline__ unsigned sm_id()
{
    unsigned r;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
    return r;
}

} // namespace cuasync
