// cuasync/mbarrier.cuh — the shared-memory mbarrier (PTX ISA "Parallel synchronization:
// mbarrier"). A barrier is 8 bytes, 8-byte aligned, in shared memory; it counts arrivals and
// transaction bytes, completes a phase when both reach zero, and flips its phase parity.
// Compiled by NVRTC with no host headers. The ISA versions below are the instruction's; the
// .shared::cta spelling of its state space needs PTX ISA 7.8 (NVRTC 12+ emits 8.x or newer).
#pragma once

#include <cuasync/arch.cuh>
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
CUASYNC_REFUSE_HEADER("mbarrier.cuh", "sm_80 (PTX ISA 7.0)");
#endif
#include <cuasync/watchdog.cuh>

namespace cuasync {

// An mbarrier: opaque, 8 bytes, 8-byte aligned; touched only through the functions below.
struct __align__(8) mbarrier_t {
    unsigned long long opaque_;
};

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

// mbarrier.arrive_drop.shared::cta.b64 state, [addr];                  // PTX ISA 7.0, sm_80
// Arrive and lower the expected arrival count of every later phase by one: a thread that leaves.
__device__ __forceinline__ unsigned long long arrive_drop(mbarrier_t *bar)
{
    unsigned long long state;
    asm volatile("mbarrier.arrive_drop.shared::cta.b64 %0, [%1];" : "=l"(state) : "r"(smem_addr(bar)) : "memory");
    return state;
}

// mbarrier.test_wait.shared::cta.b64 p, [addr], state;                 // PTX ISA 7.0, sm_80
// True once the phase that `state` (an arrive's token) belongs to has completed. Never blocks.
__device__ __forceinline__ bool test_wait(mbarrier_t *bar, unsigned long long state)
{
    unsigned done;
    asm volatile("{\n\t.reg .pred p;\n\t"
                 "mbarrier.test_wait.shared::cta.b64 p, [%1], %2;\n\t"
                 "selp.u32 %0, 1, 0, p;\n\t}"
                 : "=r"(done) : "r"(smem_addr(bar)), "l"(state) : "memory");
    return done != 0;
}

// mbarrier.test_wait.parity.shared::cta.b64 p, [addr], parity;         // PTX ISA 7.1, sm_80
__device__ __forceinline__ bool test_wait_parity(mbarrier_t *bar, unsigned parity)
{
    unsigned done;
    asm volatile("{\n\t.reg .pred p;\n\t"
                 "mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                 "selp.u32 %0, 1, 0, p;\n\t}"
                 : "=r"(done) : "r"(smem_addr(bar)), "r"(parity) : "memory");
    return done != 0;
}

// mbarrier.pending_count.b64 count, state;                             // PTX ISA 7.0, sm_80
// Arrivals still pending in the phase `state` was taken from (at the time of that arrive).
__device__ __forceinline__ unsigned pending_count(unsigned long long state)
{
    unsigned count;
    asm volatile("mbarrier.pending_count.b64 %0, %1;" : "=r"(count) : "l"(state));
    return count;
}

#if __CUDA_ARCH__ >= 900
// mbarrier.arrive.shared::cta.b64 state, [addr], count;                // PTX ISA 7.8, sm_90
// count arrivals at once (1 .. 2^20-1).
__device__ __forceinline__ unsigned long long arrive(mbarrier_t *bar, unsigned count)
{
    unsigned long long state;
    asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1], %2;" : "=l"(state) : "r"(smem_addr(bar)), "r"(count) : "memory");
    return state;
}

// mbarrier.arrive_drop.shared::cta.b64 state, [addr], count;           // PTX ISA 7.8, sm_90
// count arrivals, and every later phase expects count fewer.
__device__ __forceinline__ unsigned long long arrive_drop(mbarrier_t *bar, unsigned count)
{
    unsigned long long state;
    asm volatile("mbarrier.arrive_drop.shared::cta.b64 %0, [%1], %2;" : "=l"(state) : "r"(smem_addr(bar)), "r"(count) : "memory");
    return state;
}

// mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [addr], tx;           // PTX ISA 8.0, sm_90
// Raise the current phase's expected transaction bytes without arriving.
__device__ __forceinline__ void expect_tx(mbarrier_t *bar, unsigned tx_bytes)
{
    asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;" :: "r"(smem_addr(bar)), "r"(tx_bytes) : "memory");
}

// mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [addr], tx;         // PTX ISA 8.0, sm_90
// Mark tx transaction bytes done, as a copy's complete_tx would (without moving data).
__device__ __forceinline__ void complete_tx(mbarrier_t *bar, unsigned tx_bytes)
{
    asm volatile("mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%0], %1;" :: "r"(smem_addr(bar)), "r"(tx_bytes) : "memory");
}

// mbarrier.try_wait.shared::cta.b64 p, [addr], state;                  // PTX ISA 7.8, sm_90
// Like test_wait, but may suspend the thread for a system-dependent time first.
__device__ __forceinline__ bool try_wait(mbarrier_t *bar, unsigned long long state)
{
    unsigned done;
    asm volatile("{\n\t.reg .pred p;\n\t"
                 "mbarrier.try_wait.shared::cta.b64 p, [%1], %2;\n\t"
                 "selp.u32 %0, 1, 0, p;\n\t}"
                 : "=r"(done) : "r"(smem_addr(bar)), "l"(state) : "memory");
    return done != 0;
}

// mbarrier.try_wait.shared::cta.b64 p, [addr], state, suspend_ns;      // PTX ISA 7.8, sm_90
// With a hint of how long (ns) the thread may be suspended waiting.
__device__ __forceinline__ bool try_wait(mbarrier_t *bar, unsigned long long state, unsigned suspend_ns)
{
    unsigned done;
    asm volatile("{\n\t.reg .pred p;\n\t"
                 "mbarrier.try_wait.shared::cta.b64 p, [%1], %2, %3;\n\t"
                 "selp.u32 %0, 1, 0, p;\n\t}"
                 : "=r"(done) : "r"(smem_addr(bar)), "l"(state), "r"(suspend_ns) : "memory");
    return done != 0;
}

// mbarrier.try_wait.parity.shared::cta.b64 p, [addr], parity, suspend_ns;   // PTX ISA 7.8, sm_90
__device__ __forceinline__ bool try_wait_parity(mbarrier_t *bar, unsigned parity, unsigned suspend_ns)
{
    unsigned done;
    asm volatile("{\n\t.reg .pred p;\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2, %3;\n\t"
                 "selp.u32 %0, 1, 0, p;\n\t}"
                 : "=r"(done) : "r"(smem_addr(bar)), "r"(parity), "r"(suspend_ns) : "memory");
    return done != 0;
}

// mapa.shared::cluster.u32 remote, addr, cta;                          // PTX ISA 7.8, sm_90
// mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote];     // PTX ISA 8.0, sm_90
// Arrive on the barrier at the same shared-memory offset in block cta_rank of this cluster
// (a consumer releasing a stage to the block that multicast into it).
__device__ __forceinline__ void arrive_cluster(mbarrier_t *bar, unsigned cta_rank)
{
    asm volatile("{\n\t.reg .b32 remote;\n\t"
                 "mapa.shared::cluster.u32 remote, %0, %1;\n\t"
                 "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote];\n\t}"
                 :: "r"(smem_addr(bar)), "r"(cta_rank) : "memory");
}

// mapa.shared::cluster.u32 remote, addr, rank;                         // PTX ISA 7.8, sm_90
// mbarrier.arrive.release.cta.shared::cluster.b64 _, [remote];          // PTX ISA 8.0, sm_90
// The same arrive with release at CTA scope (PTX's default scope; the form CUTLASS's
// ClusterBarrier::arrive(cta_id) issues): what pipeline<Config> releases a peer's stage with.
// Measured on the H200: far cheaper than the cluster-scope release (examples/gemm_ablation.lua).
__device__ __forceinline__ void arrive_cluster_cta(mbarrier_t *bar, unsigned cta_rank)
{
    asm volatile("{\n\t.reg .b32 remote;\n\t"
                 "mapa.shared::cluster.u32 remote, %0, %1;\n\t"
                 "mbarrier.arrive.release.cta.shared::cluster.b64 _, [remote];\n\t}"
                 :: "r"(smem_addr(bar)), "r"(cta_rank) : "memory");
}

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

// Wait for the phase of the given parity at most `tries` times (each try may suspend up to
// suspend_ns): true once it completed, false if it did not — a probe that must report, not hang.
__device__ __forceinline__ bool wait_parity_bounded(mbarrier_t *bar, unsigned parity, unsigned tries,
                                                    unsigned suspend_ns = 10000)
{
    return watchdog::spin_bounded([&] { return try_wait_parity(bar, parity, suspend_ns); }, tries);
}
#else
CUASYNC_REFUSE("", arrive, CUASYNC_SM90)
CUASYNC_REFUSE("", arrive_drop, CUASYNC_SM90)
CUASYNC_REFUSE("", expect_tx, CUASYNC_SM90)
CUASYNC_REFUSE("", complete_tx, CUASYNC_SM90)
CUASYNC_REFUSE("", try_wait, CUASYNC_SM90)
CUASYNC_REFUSE("", arrive_cluster, CUASYNC_SM90)
CUASYNC_REFUSE("", arrive_cluster_cta, CUASYNC_SM90)
CUASYNC_REFUSE("", fence_init, CUASYNC_SM90)
CUASYNC_REFUSE("", arrive_expect_tx, CUASYNC_SM90)
CUASYNC_REFUSE("", try_wait_parity, CUASYNC_SM90)
CUASYNC_REFUSE("", wait_parity_bounded, CUASYNC_SM90)
#endif

// mbarrier.inval.shared::cta.b64 [addr];                               // PTX ISA 7.0, sm_80
// Required before the barrier's shared memory is reused for anything else.
__device__ __forceinline__ void inval(mbarrier_t *bar)
{
    asm volatile("mbarrier.inval.shared::cta.b64 [%0];" :: "r"(smem_addr(bar)) : "memory");
}

// The one wait, on every arch from sm_80, through watchdog::spin_until: mbarrier.try_wait from
// sm_90 (the hardware may suspend the thread until the phase completes), test_wait and a short
// nanosleep below it (so that a spinning warp leaves issue slots to the others). `s` tells the
// watchdog what is waited for (pipeline.cuh fills in its stage, role and iteration).
// Wait for the phase of the given parity.
__device__ __forceinline__ void wait_parity(mbarrier_t *bar, unsigned parity, const watchdog::site &s)
{
#if __CUDA_ARCH__ >= 900
    watchdog::spin_until([&] { return try_wait_parity(bar, parity); }, s);
#else
    watchdog::spin_until_sleeping([&] { return test_wait_parity(bar, parity); }, s);
#endif
}
__device__ __forceinline__ void wait_parity(mbarrier_t *bar, unsigned parity)
{
    wait_parity(bar, parity, watchdog::site{ smem_addr(bar), parity, 0u, 0u, 0u, 0u, 0u, 0u });
}

// Wait for the phase `state` (an arrive's token) belongs to.
__device__ __forceinline__ void wait(mbarrier_t *bar, unsigned long long state)
{
    const watchdog::site s{ smem_addr(bar), 0xFFFFFFFFu, 0u, 0u, 0u, 0u, 0u, 0u };
#if __CUDA_ARCH__ >= 900
    watchdog::spin_until([&] { return try_wait(bar, state); }, s);
#else
    watchdog::spin_until_sleeping([&] { return test_wait(bar, state); }, s);
#endif
}

} // namespace mbarrier

} // namespace cuasync
