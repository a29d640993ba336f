// bulk_add_one.cu — pattern 7: 1D bulk copies (TMA without a tensor map) round trip. Each tile
// is loaded as PARTS bulk copies on one mbarrier whose expect_tx is their summed byte count,
// all issued by one elected thread; every thread adds one to its words in shared memory,
// fences its generic writes for the async proxy, the block syncs, and the elected thread stores
// the tile back with a bulk copy. STAGES tiles in flight. out[i] = in[i] + 1 on u32; n a
// multiple of 4 (16 bytes).
#include <cuasync/mbarrier.cuh>
#include <cuasync/ring.cuh>       // stage_state
#include <cuasync/bulk.cuh>

#ifndef STAGES
#define STAGES 4
#endif
#ifndef TILE_BYTES
#define TILE_BYTES 8192
#endif
#ifndef PARTS
#define PARTS 4
#endif
#define THREADS 256
static_assert(TILE_BYTES % (16 * PARTS) == 0, "TILE_BYTES must split into PARTS multiples of 16 bytes");

typedef unsigned long long u64;
namespace mb = cuasync::mbarrier;
namespace bulk = cuasync::bulk;

extern "C" __global__ void __launch_bounds__(THREADS) bulk_add_one(unsigned *out, const unsigned *in, u64 n)
{
    extern __shared__ __align__(128) unsigned char ring[];   // STAGES * TILE_BYTES
    __shared__ cuasync::mbarrier_t full[STAGES];
    constexpr unsigned TW = TILE_BYTES / 4;                   // words per tile
    const u64 ntiles = (n + TW - 1) / TW;
    const u64 mine = blockIdx.x < ntiles ? (ntiles - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
    // One thread issues every copy and owns the bulk groups (they are per thread): elect it once.
    const bool leader = threadIdx.x < 32 && bulk::elect_one();
    if (leader) {
        for (int s = 0; s < STAGES; ++s) mb::init(&full[s], 1);
        mb::fence_init();
    }
    __syncthreads();
    auto words = [&](u64 j) {
        const u64 first = (blockIdx.x + j * gridDim.x) * (u64)TW;
        return (unsigned)(n - first < TW ? n - first : TW);
    };
    auto issue = [&](u64 j) {                                 // leader only
        const int s = (int)(j % STAGES);
        const u64 first = (blockIdx.x + j * gridDim.x) * (u64)TW;
        const unsigned bytes = words(j) * 4;
        mb::arrive_expect_tx(&full[s], bytes);                // the sum of the parts below
        const unsigned part = TILE_BYTES / PARTS;
        for (unsigned off = 0; off < bytes; off += part) {
            const unsigned len = bytes - off < part ? bytes - off : part;
            bulk::load(ring + s * TILE_BYTES + off, reinterpret_cast<const unsigned char *>(in + first) + off, len, &full[s]);
        }
    };
    if (leader)
        for (u64 j = 0; j < mine && j < (u64)(STAGES - 1); ++j) issue(j);
    auto st = cuasync::stage_state<STAGES>::consumer_start();
    for (u64 j = 0; j < mine; ++j, st.advance()) {
        const int s = st.index;
        if (leader && j + STAGES - 1 < mine) {
            bulk::wait_group_read<0>();                       // the store of tile j-1 has read its stage
            issue(j + STAGES - 1);                            // ... which this load refills
        }
        mb::wait_parity(&full[s], st.phase);
        unsigned *w = reinterpret_cast<unsigned *>(ring + s * TILE_BYTES);
        const unsigned nw = words(j);
        for (unsigned k = threadIdx.x; k < nw; k += THREADS) w[k] += 1;
        bulk::fence_proxy_async_shared();                     // my writes, before the async-proxy store
        __syncthreads();
        if (leader) {
            bulk::store(out + (blockIdx.x + j * gridDim.x) * (u64)TW, w, nw * 4);
            bulk::commit_group();
        }
    }
    if (leader) bulk::wait_group<0>();
}
