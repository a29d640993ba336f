// The memory probe of cuasync.probe.memory: a dependent-load chain through device memory, so
// that each load waits for the one before it and the time per step is the load latency (what
// Little's law multiplies by bandwidth to give the bytes a pipeline must keep in flight).
// Each line of 128 bytes holds, in its first word, the index of the next line: `stride` lines
// further on (odd: the chain visits every line before it repeats), so no two steps share a line.

#include <cuasync/mbarrier.cuh>
#include <cuasync/ring.cuh>       // stage_state
#include <cuasync/bulk.cuh>
#include <cuasync/watchdog.cuh>

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

// The same chase while the memory runs at full bandwidth: the latency Little's law wants. Every
// block's thread 0 streams a bulk copy through a ring of LOAD_STAGES x LOAD_CHUNK bytes in
// shared memory (4 blocks per SM: 64 KiB in flight per SM, which reached 0.97 of
// cuMemcpyDtoD on the H200; a plain thread copy loads it to only ~0.8, where a load takes half as
// long as at full bandwidth). Block 0's thread 32 waits 30 us for the stream to ramp up, chases,
// writes out[0] = ns for `steps` loads, then raises *done; the streams stop at *done, or after
// 200 ms whatever happens (no unbounded spin), and each block writes the bytes it moved (read +
// written) and the ns they took to moved[2 b], moved[2 b + 1]: the load the chase saw.
// The grid must be co-resident: 4 blocks of 64 threads per SM (probe.lua: LOAD_BLOCKS).
#define LOAD_STAGES 4
#define LOAD_CHUNK 4096

extern "C" __global__ void __launch_bounds__(64) probe_loaded(const unsigned *chain, unsigned start, unsigned steps,
    const char *src, char *dst, unsigned long long chunks, volatile unsigned *done, unsigned long long *out,
    unsigned long long *moved)
{
    typedef unsigned long long u64;
    namespace mb = cuasync::mbarrier;
    namespace bulk = cuasync::bulk;
    __shared__ __align__(128) unsigned char ring[LOAD_STAGES * LOAD_CHUNK];
    __shared__ cuasync::mbarrier_t full[LOAD_STAGES];
    const u64 t0 = cuasync::watchdog::now();
    const u64 ramp = 30000, limit = 200000000;
    if (blockIdx.x == 0 && threadIdx.x == 32) {
        while (cuasync::watchdog::now() - t0 < ramp) {}
        unsigned j = start;
        const u64 a = cuasync::watchdog::now();
        for (unsigned s = 0; s < steps; ++s) j = __ldcg(chain + (u64)j * 32);
        out[0] = cuasync::watchdog::now() - a;
        out[1] = j;
        __threadfence();
        *done = 1;
        return;
    }
    if (threadIdx.x != 0) return;
    for (int s = 0; s < LOAD_STAGES; ++s) mb::init(&full[s], 1);
    mb::fence_init();
    auto chunk = [&](u64 i) { return (blockIdx.x + i * gridDim.x) % chunks * LOAD_CHUNK; };
    auto load = [&](u64 i) {
        const int s = (int)(i % LOAD_STAGES);
        mb::arrive_expect_tx(&full[s], LOAD_CHUNK);
        bulk::load(ring + s * LOAD_CHUNK, src + chunk(i), LOAD_CHUNK, &full[s]);
    };
    // a stage is refilled once the store of the stage before it has read its data (one store in
    // flight), until *done: then the loads already issued land and their stores finish
    u64 issued = 0, bytes = 0, first = 0, last = 0;
    bool stop = false;
    for (; issued < LOAD_STAGES; ++issued) load(issued);
    auto st = cuasync::stage_state<LOAD_STAGES>::consumer_start();
    for (u64 i = 0; i < issued; ++i, st.advance()) {
        mb::wait_parity(&full[st.index], st.phase);
        const u64 t = cuasync::watchdog::now();
        if (!stop && t - t0 > ramp) {
            if (!first) first = t;
            else bytes += 2 * LOAD_CHUNK;
            last = t;
        }
        bulk::store(dst + chunk(i), ring + st.index * LOAD_CHUNK, LOAD_CHUNK);
        bulk::commit_group();
        if (!stop && (*done || t - t0 > limit)) stop = true;
        if (!stop && i >= 1) {
            bulk::wait_group_read<1>();
            load(issued++);
        }
    }
    bulk::wait_group<0>();
    moved[2 * blockIdx.x] = bytes;
    moved[2 * blockIdx.x + 1] = last - first;
}
