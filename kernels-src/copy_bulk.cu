// copy_bulk.cu — a pipelined bulk copy through shared memory: a ring of STAGES buffers of CHUNK
// bytes, one mbarrier per stage. One thread per block drives the copy engine: cp.async.bulk in
// (complete_tx on the stage's barrier), cp.async.bulk out (bulk groups); a stage is refilled once
// the store that read it has finished reading (wait_group.read). Blocks take chunks round-robin.
// Any size that is a multiple of 16 bytes; the last chunk may be short.
#include <cuasync/mbarrier.cuh>
#include <cuasync/ring.cuh>       // stage_state
#include <cuasync/bulk.cuh>

#ifndef STAGES
#define STAGES 4
#endif
#ifndef CHUNK
#define CHUNK 16384
#endif
// Stores left in flight before their stage is reused: more overlap, fewer loads in flight.
#ifndef STORE_LAG
#define STORE_LAG 1
#endif

static_assert(STAGES >= 1 && STAGES <= 64, "STAGES must be 1..64");
static_assert(CHUNK % 16 == 0 && CHUNK >= 16, "CHUNK must be a positive multiple of 16 bytes");
static_assert(STORE_LAG >= 0, "STORE_LAG must be >= 0");

// A stage can only be refilled after the load that needs it was issued: lag < STAGES.
constexpr int LAG = STORE_LAG < STAGES ? STORE_LAG : STAGES - 1;

extern "C" __global__ void __launch_bounds__(32) copy_bulk(char *dst, const char *src, unsigned long long bytes)
{
    extern __shared__ __align__(128) unsigned char ring[];   // STAGES * CHUNK bytes
    __shared__ cuasync::mbarrier_t full[STAGES];
    namespace mb = cuasync::mbarrier;
    namespace bulk = cuasync::bulk;

    if (threadIdx.x != 0) return;   // the copy engine needs one thread to issue
    const unsigned long long nchunks = (bytes + CHUNK - 1) / CHUNK;
    if (blockIdx.x >= nchunks) return;
    // chunks of this block: blockIdx.x, blockIdx.x + gridDim.x, ...
    const unsigned long long n = (nchunks - blockIdx.x + gridDim.x - 1) / gridDim.x;

    for (int s = 0; s < STAGES; ++s) mb::init(&full[s], 1);
    mb::fence_init();

    auto chunk_of = [&](unsigned long long i) { return blockIdx.x + i * gridDim.x; };
    auto issue_load = [&](unsigned long long i) {
        const unsigned long long off = chunk_of(i) * CHUNK;
        const unsigned len = (unsigned)(bytes - off < CHUNK ? bytes - off : CHUNK);
        const int s = (int)(i % STAGES);
        mb::arrive_expect_tx(&full[s], len);
        bulk::load(ring + (size_t)s * CHUNK, src + off, len, &full[s]);
    };

    for (unsigned long long i = 0; i < n && i < STAGES; ++i) issue_load(i);
    auto st = cuasync::stage_state<STAGES>::consumer_start();
    for (unsigned long long i = 0; i < n; ++i, st.advance()) {
        const int s = st.index;
        mb::wait_parity(&full[s], st.phase);
        const unsigned long long off = chunk_of(i) * CHUNK;
        const unsigned len = (unsigned)(bytes - off < CHUNK ? bytes - off : CHUNK);
        bulk::store(dst + off, ring + (size_t)s * CHUNK, len);
        bulk::commit_group();
        // refill the stage of store i - LAG once that store has read it
        if (i >= (unsigned long long)LAG && i - LAG + STAGES < n) {
            bulk::wait_group_read<LAG>();
            issue_load(i - LAG + STAGES);
        }
    }
    bulk::wait_group<0>();   // every write to global memory is done before the block exits
}
