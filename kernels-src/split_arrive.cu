// split_arrive.cu — pattern 3: split arrive/wait on an mbarrier. Each thread stages its element
// in shared memory and arrives; then does work that needs only its own element; then waits for
// the phase and reads its neighbour's element (written by another thread).
//   split_arrive  arrive -> independent work -> wait      (the work overlaps the stragglers)
//   joined        arrive -> wait -> the same work          (the work starts after the last)
// out[i] = lcg^WORK(in[i]) + in[i ^ 1], where lcg(x) = x * 1664525 + 1013904223 (mod 2^32).
// The loads of in[] arrive at different times in different warps, so the split form lets early
// warps compute while late ones wait for memory: the difference shows in the timing.
#include <cuasync/mbarrier.cuh>

#ifndef WORK
#define WORK 64
#endif
#define THREADS 256

typedef unsigned long long u64;
namespace mb = cuasync::mbarrier;

__device__ __forceinline__ unsigned work(unsigned x)
{
#pragma unroll 8
    for (int k = 0; k < WORK; ++k) x = x * 1664525u + 1013904223u;
    return x;
}

template <bool SPLIT>
__device__ __forceinline__ void run(unsigned *out, const unsigned *in, u64 n)
{
    __shared__ unsigned staged[2][THREADS];   // alternate tiles: see below
    __shared__ cuasync::mbarrier_t bar;
    if (threadIdx.x == 0) mb::init(&bar, THREADS);
    __syncthreads();
    const u64 ntiles = (n + THREADS - 1) / THREADS;
    unsigned phase = 0;
    for (u64 t = blockIdx.x; t < ntiles; t += gridDim.x, phase ^= 1) {
        const u64 i = t * THREADS + threadIdx.x;
        const unsigned x = i < n ? in[i] : 0u;
        staged[phase][threadIdx.x] = x;
        mb::arrive(&bar);                                  // release: staged[] is visible after the phase
        unsigned y = 0;
        if (SPLIT) y = work(x);                            // independent of every other thread
        mb::wait_parity(&bar, phase);
        if (!SPLIT) y = work(x);
        const unsigned nb = staged[phase][threadIdx.x ^ 1];
        if (i < n && (i ^ 1) < n) out[i] = y + nb;
        else if (i < n) out[i] = y;                        // an odd n: the last element has no pair
        // staged[phase] is written again two tiles on, after this thread saw the next phase
        // complete: every thread arrived there, after its read here. No block barrier needed.
    }
}

extern "C" __global__ void __launch_bounds__(THREADS) split_arrive(unsigned *out, const unsigned *in, u64 n) { run<true>(out, in, n); }
extern "C" __global__ void __launch_bounds__(THREADS) joined(unsigned *out, const unsigned *in, u64 n) { run<false>(out, in, n); }
