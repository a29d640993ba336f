// cancel_probe.cu — which path from the host reaches a running kernel (examples/bench_cancel.lua):
// every thread spins until a word turns nonzero, either a word in pinned host memory the host
// stores to (read over PCIe through the mapping), or a device global the host copies 1 into on
// a stream of its own. A spin gives up after LIMIT_NS of %globaltimer and counts itself, so a
// path that never arrives ends as a count, not a hang.
#include <cuasync/watchdog.cuh>

#ifndef LIMIT_NS
#define LIMIT_NS 3000000000ull
#endif

extern "C" {
__device__ unsigned cancel_probe_word;
}

extern "C" __global__ void spin_mapped(unsigned long long flag_address, unsigned *gave_up)
{
    const volatile unsigned *flag = (const volatile unsigned *)flag_address;
    const unsigned long long t0 = cuasync::watchdog::now();
    while (*flag == 0u) {
        __nanosleep(256);
        if (cuasync::watchdog::now() - t0 > LIMIT_NS) { atomicAdd(gave_up, 1u); return; }
    }
}

extern "C" __global__ void spin_global(unsigned *gave_up)
{
    const unsigned long long t0 = cuasync::watchdog::now();
    while (*(volatile unsigned *)&cancel_probe_word == 0u) {
        __nanosleep(256);
        if (cuasync::watchdog::now() - t0 > LIMIT_NS) { atomicAdd(gave_up, 1u); return; }
    }
}
