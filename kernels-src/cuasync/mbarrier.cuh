// cuasync/mbarrier.cuh — the shared-memory mbarrier (PTX ISA "Parallel synchronization:
// mbarrier"). A barrier is 8 bytes, 8-byte aligned, in shared memory; it counts arrivals and
// transaction bytes, completes a phase when both reach zero, and flips its phase parity.
// Compiled by NVRTC with no host headers.
#pragma once

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "cuasync/mbarrier.cuh: mbarrier needs sm_80 or newer (PTX ISA 7.0)"
#endif

// Where an sm_90 wrapper is used on an older target, its stand-in fails to compile with this
// message (a template, so only a use fires it, not the include).
#define CUASYNC_NEEDS_SM90(fn, ...) \
    template <typename cuasync_T = void> __device__ void fn(__VA_ARGS__) \
    { static_assert(sizeof(cuasync_T *) == 0, "cuasync: " #fn " needs sm_90 (PTX ISA 8.0)"); }

namespace cuasync {

typedef unsigned long long mbarrier_t;

// The 32-bit shared-window address PTX's .shared operands take.
__device__ __forceinline__ unsigned smem_addr(const void *p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

namespace mbarrier {

// mbarrier.init.shared::cta.b64 [addr], count;                        // PTX ISA 7.0, sm_80
__device__ __forceinline__ void init(mbarrier_t *bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem_addr(bar)), "r"(count) : "memory");
}

// mbarrier.arrive.shared::cta.b64 state, [addr];                       // PTX ISA 7.0, sm_80
__device__ __forceinline__ unsigned long long arrive(mbarrier_t *bar)
{
    unsigned long long state;
    asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1];" : "=l"(state) : "r"(smem_addr(bar)) : "memory");
    return state;
}

#if __CUDA_ARCH__ >= 900
// fence.mbarrier_init.release.cluster;                                 // PTX ISA 8.0, sm_90
// Makes the inits above visible to the async proxy (bulk copies complete_tx on them) and to the
// cluster. Call once after the inits, before any thread or copy uses the barriers.
__device__ __forceinline__ void fence_init()
{
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 state, [addr], tx;   // PTX ISA 8.0, sm_90
// One arrival plus tx transaction bytes the phase must also see completed (by complete_tx).
__device__ __forceinline__ unsigned long long arrive_expect_tx(mbarrier_t *bar, unsigned tx_bytes)
{
    unsigned long long state;
    asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 %0, [%1], %2;"
                 : "=l"(state) : "r"(smem_addr(bar)), "r"(tx_bytes) : "memory");
    return state;
}

// mbarrier.try_wait.parity.shared::cta.b64 p, [addr], parity;           // PTX ISA 7.8, sm_90
// True once the phase with the given parity has completed. May suspend the thread for a
// system-dependent time before returning false.
__device__ __forceinline__ bool try_wait_parity(mbarrier_t *bar, unsigned parity)
{
    unsigned done;
    asm volatile("{\n\t.reg .pred p;\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                 "selp.u32 %0, 1, 0, p;\n\t}"
                 : "=r"(done) : "r"(smem_addr(bar)), "r"(parity) : "memory");
    return done != 0;
}

// Wait for the phase of the given parity. With CUASYNC_WAIT_LIMIT defined, a wait that spins
// that many times traps (the launch then fails with an error instead of hanging the GPU).
__device__ __forceinline__ void wait_parity(mbarrier_t *bar, unsigned parity)
{
#ifdef CUASYNC_WAIT_LIMIT
    unsigned long long spins = 0;
    while (!try_wait_parity(bar, parity))
        if (++spins == (unsigned long long)(CUASYNC_WAIT_LIMIT)) __trap();
#else
    while (!try_wait_parity(bar, parity)) {}
#endif
}
#else
CUASYNC_NEEDS_SM90(fence_init)
CUASYNC_NEEDS_SM90(arrive_expect_tx, mbarrier_t *, unsigned)
CUASYNC_NEEDS_SM90(try_wait_parity, mbarrier_t *, unsigned)
CUASYNC_NEEDS_SM90(wait_parity, mbarrier_t *, unsigned)
#endif

// mbarrier.inval.shared::cta.b64 [addr];                               // PTX ISA 7.0, sm_80
// Required before the barrier's shared memory is reused for anything else.
__device__ __forceinline__ void inval(mbarrier_t *bar)
{
    asm volatile("mbarrier.inval.shared::cta.b64 [%0];" :: "r"(smem_addr(bar)) : "memory");
}

} // namespace mbarrier
} // namespace cuasync
