// The memory probe of cuasync.probe.memory: a dependent-load chain through device memory, so
// that each load waits for the one before it and the time per step is the load latency (what
// Little's law multiplies by bandwidth to give the bytes a pipeline must keep in flight).
// Each line of 128 bytes holds, in its first word, the index of the next line: `stride` lines
// further on (odd: the chain visits every line before it repeats), so no two steps share a line.

extern "C" __global__ void probe_chain(unsigned *buf, unsigned lines, unsigned stride)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < lines) buf[(unsigned long long)i * 32] = (unsigned)(((unsigned long long)i + stride) % lines);
}

// One thread follows the chain for `steps` loads from line `start`; __ldcg reads through L2
// only (L1 is bypassed), and the end of the chain is written so the loads cannot be dropped.
extern "C" __global__ void probe_chase(const unsigned *buf, unsigned start, unsigned steps, unsigned *out)
{
    unsigned j = start;
    for (unsigned s = 0; s < steps; ++s) j = __ldcg(buf + (unsigned long long)j * 32);
    out[0] = j;
}

// The same chase while every other block streams src -> dst: the latency a load sees when the
// memory runs at full bandwidth (Little's law wants this one). Block 0 waits 20 us for the
// stream to ramp up, chases, writes out[0] = ns for `steps` loads, then raises *done; the
// streaming blocks stop at *done, or after 200 ms whatever happens (no unbounded spin). The grid
// must be co-resident (two blocks of 256 threads per SM).
#include <cuasync/watchdog.cuh>

extern "C" __global__ void probe_loaded(const unsigned *chain, unsigned start, unsigned steps, const uint4 *src,
                                        uint4 *dst, unsigned long long n16, volatile unsigned *done,
                                        unsigned long long *out)
{
    unsigned long long t0 = cuasync::watchdog::now();
    if (blockIdx.x == 0) {
        if (threadIdx.x == 0) {
            while (cuasync::watchdog::now() - t0 < 20000) {}
            unsigned j = start;
            unsigned long long a = cuasync::watchdog::now();
            for (unsigned s = 0; s < steps; ++s) j = __ldcg(chain + (unsigned long long)j * 32);
            out[0] = cuasync::watchdog::now() - a;
            out[1] = j;
            __threadfence();
            *done = 1;
        }
        return;
    }
    unsigned long long stride = (unsigned long long)(gridDim.x - 1) * blockDim.x;
    unsigned long long i = (unsigned long long)(blockIdx.x - 1) * blockDim.x + threadIdx.x;
    while (*done == 0 && cuasync::watchdog::now() - t0 < 200000000ull) {
        for (int k = 0; k < 16; ++k) {
            dst[i] = __ldcg(src + i);
            i += stride;
            if (i >= n16) i -= n16;
        }
    }
}
