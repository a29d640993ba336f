// cuasync/watchdog.cuh — the one spin primitive every wait in cuasync goes through (mbarrier
// waits, pipeline waits, bounded probes), so that a bound on waiting is written once.
// Today: CUASYNC_WAIT_LIMIT (a spin count) makes an endless wait trap instead of hanging the GPU;
// the hang watchdog (a %globaltimer bound, an abort word and a post-mortem) belongs here too.
#pragma once

namespace cuasync {
namespace watchdog {

// Spin until done() holds. done() is one non-blocking test (it may suspend briefly, as
// mbarrier.try_wait does, or sleep, as the sm_80 waits do).
template <typename Done>
__device__ __forceinline__ void spin_until(Done done)
{
#ifdef CUASYNC_WAIT_LIMIT
    unsigned long long spins = 0;
    while (!done())
        if (++spins == (unsigned long long)(CUASYNC_WAIT_LIMIT)) __trap();
#else
    while (!done()) {}
#endif
}

// spin_until for a test that does not suspend (mbarrier.test_wait below sm_90): a short sleep
// after each failed test leaves issue slots to the other warps.
template <typename Test>
__device__ __forceinline__ void spin_until_sleeping(Test test, unsigned sleep_ns = 32)
{
    spin_until([&] {
        if (test()) return true;
        __nanosleep(sleep_ns);
        return false;
    });
}

// Try done() at most `tries` times: true once it held, false if it never did — a probe that must
// report, not hang.
template <typename Done>
__device__ __forceinline__ bool spin_bounded(Done done, unsigned tries)
{
    for (unsigned i = 0; i < tries; ++i)
        if (done()) return true;
    return false;
}

} // namespace watchdog
} // namespace cuasync
