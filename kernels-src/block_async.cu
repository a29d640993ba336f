// block_async.cu — pattern 2: a block-wide asynchronous copy of each tile with cp.async.cg
// 16-byte copies, STAGES tiles in flight per block, completed two ways:
//   block_groups    per-thread commit/wait groups, then a block barrier
//   block_mbarrier  each thread's copies arrive on the stage's mbarrier (cp.async.mbarrier
//                   .arrive.noinc, count = block size); consumers wait on its phase
// out[i] = in[i] + 1 on u32; n a multiple of 4 (16-byte copies). Consumers read another warp's
// vectors, so the completion mechanism is what makes the result right.
#include <cuasync/cp_async.cuh>
#include <cuasync/mbarrier.cuh>
#include <cuasync/ring.cuh>       // stage_state

#ifndef STAGES
#define STAGES 4
#endif
#ifndef VPT
#define VPT 2
#endif
#define THREADS 256
#define TILE_VECS (THREADS * VPT)
static_assert(STAGES >= 1 && STAGES <= 16, "STAGES must be 1..16");

typedef unsigned long long u64;
namespace cpa = cuasync::cp_async;
namespace mb = cuasync::mbarrier;

// A last partial tile copies and writes only the vectors below nvec.
__device__ __forceinline__ void issue_tile(uint4 *stage, const uint4 *in, u64 tile, u64 nvec)
{
    for (int k = 0; k < VPT; ++k) {
        const int v = threadIdx.x + k * THREADS;
        if (tile * TILE_VECS + v < nvec) cpa::copy_cg(&stage[v], &in[tile * TILE_VECS + v]);
    }
}
__device__ __forceinline__ void consume_tile(uint4 *out, const uint4 *stage, u64 tile, u64 nvec)
{
    for (int k = 0; k < VPT; ++k) {
        const int v = (threadIdx.x + k * THREADS + 32) % TILE_VECS;
        if (tile * TILE_VECS + v >= nvec) continue;
        const uint4 x = stage[v];
        out[tile * TILE_VECS + v] = make_uint4(x.x + 1, x.y + 1, x.z + 1, x.w + 1);
    }
}

extern "C" __global__ void __launch_bounds__(THREADS) block_groups(uint4 *out, const uint4 *in, u64 n)
{
    extern __shared__ __align__(16) uint4 ring[];   // STAGES * TILE_VECS
    const u64 nvec = n / 4, ntiles = (nvec + TILE_VECS - 1) / TILE_VECS;
    // this block's tiles: blockIdx.x + j * gridDim.x, j = 0, 1, ...
    const u64 mine = blockIdx.x < ntiles ? (ntiles - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
    auto tile_of = [&](u64 j) { return blockIdx.x + j * gridDim.x; };
    for (int s = 0; s < STAGES - 1; ++s) {              // prologue: STAGES - 1 groups, some empty
        if ((u64)s < mine) issue_tile(ring + s * TILE_VECS, in, tile_of(s), nvec);
        cpa::commit_group();
    }
    for (u64 j = 0; j < mine; ++j) {
        const u64 next = j + STAGES - 1;
        if (next < mine) issue_tile(ring + (next % STAGES) * TILE_VECS, in, tile_of(next), nvec);
        cpa::commit_group();                            // always one group per step: the count holds
        cpa::wait_group<STAGES - 1>();                  // this thread's copies of tile j have landed
        __syncthreads();                                // ... and every other thread's
        consume_tile(out, ring + (j % STAGES) * TILE_VECS, tile_of(j), nvec);
        __syncthreads();                                // stage j % STAGES is refilled next step
    }
}

extern "C" __global__ void __launch_bounds__(THREADS) block_mbarrier(uint4 *out, const uint4 *in, u64 n)
{
    extern __shared__ __align__(16) uint4 ring[];
    __shared__ cuasync::mbarrier_t full[STAGES];
    const u64 nvec = n / 4, ntiles = (nvec + TILE_VECS - 1) / TILE_VECS;
    const u64 mine = blockIdx.x < ntiles ? (ntiles - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
    auto tile_of = [&](u64 j) { return blockIdx.x + j * gridDim.x; };
    if (threadIdx.x == 0)
        for (int s = 0; s < STAGES; ++s) mb::init(&full[s], THREADS);
    __syncthreads();
    auto issue = [&](u64 j) {
        const int s = (int)(j % STAGES);
        issue_tile(ring + s * TILE_VECS, in, tile_of(j), nvec);
        cpa::mbarrier_arrive_noinc(&full[s]);           // arrives once this thread's copies land
    };
    for (u64 j = 0; j < mine && j < STAGES - 1; ++j) issue(j);
    auto st = cuasync::stage_state<STAGES>::consumer_start();
    for (u64 j = 0; j < mine; ++j, st.advance()) {
        if (j + STAGES - 1 < mine) issue(j + STAGES - 1);
        mb::wait_parity(&full[st.index], st.phase);
        consume_tile(out, ring + st.index * TILE_VECS, tile_of(j), nvec);
        __syncthreads();                                // stage st.index is refilled next step
    }
}
