// watchdog_cost.cu — what a bounded wait costs: two threads (lane 0 of two warps) ping-pong
// through two mbarriers `rounds` times (each wait blocks until the other arrives), then one of
// them waits `rounds` times on a phase already complete. cycles[0]: the ping-pong, cycles[1]:
// the immediate waits (clock64). Built with and without the watchdog by examples/bench_watchdog.lua.
#include <cuasync/mbarrier.cuh>

extern "C" __global__ void wait_cost(unsigned rounds, unsigned long long *cycles)
{
    namespace mb = cuasync::mbarrier;
    __shared__ cuasync::mbarrier_t a, b;
    if (threadIdx.x == 0) { mb::init(&a, 1); mb::init(&b, 1); }
    __syncthreads();
    const unsigned warp = threadIdx.x / 32u;
    if ((threadIdx.x & 31u) != 0u || warp > 1u) return;
    unsigned long long t0 = clock64();
    for (unsigned i = 0; i < rounds; ++i) {
        if (warp == 0) { mb::arrive(&a); mb::wait_parity(&b, i & 1u); }
        else { mb::wait_parity(&a, i & 1u); mb::arrive(&b); }
    }
    unsigned long long t1 = clock64();
    if (warp == 0) cycles[0] = t1 - t0;
    t0 = clock64();
    for (unsigned i = 0; i < rounds; ++i) mb::wait_parity(&a, (rounds - 1u) & 1u);   // complete already
    t1 = clock64();
    if (warp == 0) cycles[1] = t1 - t0;
}
