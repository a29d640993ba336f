// cuasync/watchdog.cuh — the one spin primitive every wait in cuasync goes through (mbarrier
// waits, pipeline waits, bounded probes), so that a bound on waiting is written once.
// With CUASYNC_WATCHDOG (cuasync.program{ watchdog = ... } defines it, with
// CUASYNC_WATCHDOG_NS and CUASYNC_WATCHDOG_GRACE_NS): a wait is bounded by %globaltimer; the
// first waiter to time out writes a post-mortem into host-mapped memory and raises an abort word;
// every other watched wait in the grid sees the word and leaves; each leaving thread sleeps a
// grace period (copies still in flight land) and executes PTX `exit`, which keeps the context
// usable (CUASYNC_WATCHDOG_TRAP makes it `trap` instead, for a core dump). The host reads the
// record at its next synchronize (lua/cuasync/watchdog.lua).
// Without it: CUASYNC_WAIT_LIMIT (a spin count) makes an endless wait trap; else waits are plain.
// CUASYNC_WATCHDOG_INLINE: the time-out path (give_up, leave) is inlined at each wait instead of
// called. For kernels that raise registers with setmaxnreg: a call in the raised region makes
// ptxas (CUDA 13.0) allocate that region under the launch's cap instead (attention_fwd.cu, d 128:
// up to 160 bytes of spill stores and loads, 464-552 with overlap, wgmma serialized: C7512; none
// inlined). Costs code size per wait.
// A cluster barrier wait (barrier.cluster.wait) blocks in hardware and has no try form: it is not
// bounded.
#pragma once

#include <cuasync/trace.cuh>   // the timeline's records around each sited wait (CUASYNC_TRACE)

namespace cuasync {
namespace watchdog {

// Where a wait is: its barrier, and for a pipeline's waits what the host needs to name it.
struct site {
    unsigned bar;         // shared address of the barrier (0: not a barrier wait)
    unsigned parity;      // the parity waited for (0xFFFFFFFF: a wait on an arrive's token)
    unsigned base;        // shared address of the pipeline's stage ring (0: not a pipeline wait)
    unsigned stage;
    unsigned role;        // 0 none, 1 producer, 2 consumer
    unsigned iteration;   // the pipeline iteration (advances since the role's start)
    unsigned received;    // shared address of the count of arrivals the waited stage's empty
                          // barrier received (a cp.async plan's full wait: the arrivals its
                          // full barrier was sent) (0: none); the pipeline's Config places it
    unsigned armed;       // shared address of the count of stages the producer armed (0: none)
#ifdef CUASYNC_TRACE
    trace::event *trace_ring;   // CUASYNC_TRACE_OFF: not recorded here (a plan pipeline times its
                                // own waits: pipeline.cuh's timed); nullptr: recorded here when traced
#endif
};

// mov.u64 t, %globaltimer;                                            // PTX ISA 3.1, sm_30
// Nanoseconds, global across SMs (updated every microsecond or so).
__device__ __forceinline__ unsigned long long now()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// Sleep about `ns` nanoseconds (a timed pause, not a wait on anything).
__device__ __forceinline__ void pause_ns(unsigned long long ns)
{
    const unsigned long long t0 = now();
    while (now() - t0 < ns) __nanosleep(500);
}

// exit;                                                                 // PTX ISA 1.0, sm_10
// End this thread now. Unlike trap it leaves the context usable (measured on the H200).
__device__ __forceinline__ void exit_thread()
{
    asm volatile("exit;" ::: "memory");
    __builtin_unreachable();
}

} // namespace watchdog
} // namespace cuasync

#ifdef CUASYNC_WATCHDOG
#ifndef CUASYNC_WATCHDOG_NS
#define CUASYNC_WATCHDOG_NS 2000000000ull
#endif
#ifndef CUASYNC_WATCHDOG_GRACE_NS
#define CUASYNC_WATCHDOG_GRACE_NS 200000ull
#endif
#ifdef CUASYNC_WATCHDOG_INLINE   // the time-out path (give_up, leave): inlined or called
#define CUASYNC_WATCHDOG_COLD __forceinline__
#else
#define CUASYNC_WATCHDOG_COLD __noinline__
#endif

namespace cuasync {
namespace watchdog {
// The post-mortem, in host-mapped memory: lua/cuasync/watchdog.lua declares the same layout.
struct record {
    unsigned state;          // 0 empty, 1 written (the last field stored)
    unsigned module;         // the host's id of the module
    unsigned block[3];
    unsigned cluster_rank;
    unsigned warp, lane;
    unsigned bar, parity, base, stage, role, iteration;
    unsigned phase_parity;   // the barrier's current phase parity (test_wait.parity), 2: unknown
    unsigned received;       // arrivals this stage's empty barrier has received (0xFFFFFFFF: none kept)
    unsigned armed;          // stages the producer has armed (0xFFFFFFFF: none kept)
    unsigned pad_;
    unsigned long long waited_ns;
    unsigned long long timeout_ns;
};
} // namespace watchdog
} // namespace cuasync

// Module globals the host sets at load (cuModuleGetGlobal): unmangled names.
extern "C" {
__device__ cuasync::watchdog::record *cuasync_watchdog_record;
__device__ unsigned cuasync_watchdog_module;
__device__ unsigned cuasync_watchdog_abort;   // raised by the first waiter to time out
__device__ unsigned cuasync_watchdog_claim;   // who writes the record
__device__ unsigned long long cuasync_watchdog_first;   // ~(earliest start) among timed-out waits
}

namespace cuasync {
namespace watchdog {

__device__ __forceinline__ bool aborted() { return *(volatile unsigned *)&cuasync_watchdog_abort != 0u; }

// Leave: a grace period for copies still landing in this block's shared memory, then exit.
__device__ CUASYNC_WATCHDOG_COLD void leave()
{
    pause_ns((unsigned long long)(CUASYNC_WATCHDOG_GRACE_NS));
    exit_thread();
}

// A timed-out wait: the one that began earliest writes the post-mortem (its barrier is the root
// of the hang; later waits only follow from it). Each timed-out wait posts its start, waits out an
// election window (1/64 of the timeout) after its own deadline, and writes only if its start is
// still the earliest posted; then every watched wait leaves. The record reads (and on sm_90 the
// block's cluster rank, mov.u32 r, %cluster_ctarank):
// mov.u32 r, %laneid;                                                  // PTX ISA 1.3, sm_10
// mbarrier.test_wait.parity.shared::cta.b64 p, [bar], 0;               // PTX ISA 7.1, sm_80
// ld.volatile.shared.u32 r, [progress];                                // PTX ISA 1.0, sm_10
__device__ CUASYNC_WATCHDOG_COLD void give_up(site s, unsigned long long t0, unsigned long long waited)
{
    const unsigned long long key = ~t0;
    atomicMax(&cuasync_watchdog_first, key);
    const unsigned long long until = t0 + (unsigned long long)(CUASYNC_WATCHDOG_NS) +
                                     (unsigned long long)(CUASYNC_WATCHDOG_NS) / 64u;
    while (now() < until && !aborted()) __nanosleep(1000);
    const bool writer = *(volatile unsigned long long *)&cuasync_watchdog_first == key &&
                        atomicCAS(&cuasync_watchdog_claim, 0u, 1u) == 0u;
    if (writer) {
        record *r = cuasync_watchdog_record;
        if (r) {
            unsigned rank = 0, lane;
#if __CUDA_ARCH__ >= 900
            asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
#endif
            asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
            // the barrier's own word is not readable (the SM keeps live mbarrier state elsewhere:
            // measured on the H200): its phase parity is, through test_wait.parity
            unsigned parity_now = 2u;
            if (s.bar) {
                unsigned done0;
                asm volatile("{\n\t.reg .pred p;\n\tmbarrier.test_wait.parity.shared::cta.b64 p, [%1], 0;\n\t"
                             "selp.u32 %0, 1, 0, p;\n\t}" : "=r"(done0) : "r"(s.bar) : "memory");
                parity_now = done0 ? 1u : 0u;   // parity 0 complete: the current phase is odd
            }
            unsigned received = 0xFFFFFFFFu, armed = 0xFFFFFFFFu;
            if (s.received) asm volatile("ld.volatile.shared.u32 %0, [%1];" : "=r"(received) : "r"(s.received));
            if (s.armed) asm volatile("ld.volatile.shared.u32 %0, [%1];" : "=r"(armed) : "r"(s.armed));
            volatile record *v = r;
            v->module = cuasync_watchdog_module;
            v->block[0] = blockIdx.x; v->block[1] = blockIdx.y; v->block[2] = blockIdx.z;
            v->cluster_rank = rank;
            v->warp = (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) / 32u;
            v->lane = lane;
            v->bar = s.bar; v->parity = s.parity; v->base = s.base; v->stage = s.stage; v->role = s.role;
            v->iteration = s.iteration;
            v->phase_parity = parity_now;
            v->received = received;
            v->armed = armed;
            v->waited_ns = waited;
            v->timeout_ns = (unsigned long long)(CUASYNC_WATCHDOG_NS);
            __threadfence_system();
            v->state = 1u;
            __threadfence_system();
        }
    }
    atomicExch(&cuasync_watchdog_abort, 1u);
    __threadfence();
#ifdef CUASYNC_TRACE
    trace::detail::left(s.bar, s.base, s.parity, s.role, s.iteration, t0);   // the wait that timed out
#endif
#ifdef CUASYNC_WATCHDOG_TRAP
    if (writer) __trap();   // only once the post-mortem is out; the others leave quietly
#endif
    leave();
}

} // namespace watchdog
} // namespace cuasync
#endif // CUASYNC_WATCHDOG

namespace cuasync {
namespace watchdog {

// The spin itself (spin_until, below, adds the timeline's records around it).
template <typename Done>
__device__ __forceinline__ void spin_core(Done done, const site &s)
{
#if defined(CUASYNC_WATCHDOG)
    if (done()) return;
    const unsigned long long t0 = now();
    for (unsigned i = 1;; ++i) {
        if (done()) return;
        if ((i & 7u) == 0u) {
            const unsigned long long t = now();
            if (t - t0 > (unsigned long long)(CUASYNC_WATCHDOG_NS)) give_up(s, t0, t - t0);
            if (aborted()) {
#ifdef CUASYNC_TRACE
                trace::detail::left(s.bar, s.base, s.parity, s.role, s.iteration, t0);   // a wait that never ended
#endif
                leave();
            }
        }
    }
#elif defined(CUASYNC_WAIT_LIMIT)
    (void)s;
    unsigned long long spins = 0;
    while (!done())
        if (++spins == (unsigned long long)(CUASYNC_WAIT_LIMIT)) __trap();
#else
    (void)s;
    while (!done()) {}
#endif
}

// Spin until done() holds. done() is one non-blocking test (it may suspend briefly, as
// mbarrier.try_wait does, or sleep, as the sm_80 waits do). `s` says what is waited for; with
// CUASYNC_TRACE a sited wait (a barrier's, a hand-written ring's) is recorded: its start and
// length (a plan pipeline's waits are timed by the pipeline: pipeline.cuh's timed).
template <typename Done>
__device__ __forceinline__ void spin_until(Done done, const site &s)
{
#ifdef CUASYNC_TRACE
    if (s.trace_ring == CUASYNC_TRACE_OFF) { spin_core(done, s); return; }
    if ((s.bar != 0u || s.role != 0u) && trace::detail::recording()) {   // a plain barrier's, a hand-written ring's
        const unsigned long long t0 = trace::cycles();
        spin_core(done, s);
        trace::detail::waited(s.bar, s.base, s.parity, s.role, s.iteration, t0);
        return;
    }
    spin_core(done, s);
#else
    spin_core(done, s);
#endif
}

template <typename Done>
__device__ __forceinline__ void spin_until(Done done)
{
    spin_until(done, site{ 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u });
}

// spin_until for a test that does not suspend (mbarrier.test_wait below sm_90): a short sleep
// after each failed test leaves issue slots to the other warps.
template <typename Test>
__device__ __forceinline__ void spin_until_sleeping(Test test, const site &s, unsigned sleep_ns = 32)
{
    spin_until([&] {
        if (test()) return true;
        __nanosleep(sleep_ns);
        return false;
    }, s);
}

// Try done() at most `tries` times: true once it held, false if it never did — a probe that must
// report, not hang. With the watchdog, a raised abort word makes it leave.
template <typename Done>
__device__ __forceinline__ bool spin_bounded(Done done, unsigned tries)
{
    for (unsigned i = 0; i < tries; ++i) {
        if (done()) return true;
#ifdef CUASYNC_WATCHDOG
        if (aborted()) leave();
#endif
    }
    return false;
}

} // namespace watchdog
} // namespace cuasync
