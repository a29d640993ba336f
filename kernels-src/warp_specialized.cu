// warp_specialized.cu — pattern 4: producer/consumer with warp specialization. Warp 0 is the
// producer: its 32 lanes fill a double buffer with cp.async.cg (16 bytes each), and the copies
// arrive on the stage's `filled` barrier as they land (cp.async.mbarrier.arrive.noinc, count
// 32). Warps 1..CONSUMERS drain it: wait `filled`, compute, store, arrive on `ready` (count
// CONSUMERS * 32). The producer waits `ready` before refilling, starting on the opposite phase.
// out[i] = in[i] + 1 on u32; n a multiple of 4.
#include <cuasync/cp_async.cuh>
#include <cuasync/mbarrier.cuh>
#include <cuasync/ring.cuh>       // stage_state

#ifndef CONSUMERS
#define CONSUMERS 4
#endif
#ifndef STAGES
#define STAGES 2          // a double buffer
#endif
#ifndef TILE_VECS
#define TILE_VECS 1024    // 16-byte vectors per stage (16 KiB)
#endif
#define THREADS (32 * (CONSUMERS + 1))

typedef unsigned long long u64;
namespace cpa = cuasync::cp_async;
namespace mb = cuasync::mbarrier;

extern "C" __global__ void __launch_bounds__(THREADS) warp_specialized(uint4 *out, const uint4 *in, u64 n)
{
    extern __shared__ __align__(16) uint4 ring[];   // STAGES * TILE_VECS
    __shared__ cuasync::mbarrier_t filled[STAGES], ready[STAGES];
    const u64 nvec = n / 4, ntiles = (nvec + TILE_VECS - 1) / TILE_VECS;
    const u64 mine = blockIdx.x < ntiles ? (ntiles - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
    if (threadIdx.x == 0)
        for (int s = 0; s < STAGES; ++s) { mb::init(&filled[s], 32); mb::init(&ready[s], CONSUMERS * 32); }
    __syncthreads();
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    cuasync::stage_state<STAGES> st = warp == 0 ? cuasync::stage_state<STAGES>::producer_start()
                                                : cuasync::stage_state<STAGES>::consumer_start();
    for (u64 j = 0; j < mine; ++j, st.advance()) {
        const u64 base = (blockIdx.x + j * gridDim.x) * (u64)TILE_VECS;
        uint4 *stage = ring + st.index * TILE_VECS;
        if (warp == 0) {
            mb::wait_parity(&ready[st.index], st.phase);
            for (int v = lane; v < TILE_VECS; v += 32)
                if (base + v < nvec) cpa::copy_cg(&stage[v], &in[base + v]);
            cpa::mbarrier_arrive_noinc(&filled[st.index]);
        } else {
            mb::wait_parity(&filled[st.index], st.phase);
            for (int v = threadIdx.x - 32; v < TILE_VECS; v += CONSUMERS * 32) {
                if (base + v >= nvec) continue;
                const uint4 x = stage[v];
                out[base + v] = make_uint4(x.x + 1, x.y + 1, x.z + 1, x.w + 1);
            }
            mb::arrive(&ready[st.index]);
        }
    }
}
