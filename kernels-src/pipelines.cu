// pipelines.cu — pattern 5: the same tile computation through cuasync/pipeline.cuh.
//   pipe_single       one stage, unified: every thread copies (cp.async.cg) and consumes
//   pipe_unified      STAGES stages, unified: tiles j+1 .. j+STAGES-1 load while tile j is used
//   pipe_partitioned  STAGES stages, partitioned: one producer warp whose elected lane loads each
//                     tile with one bulk copy (cp.async.bulk, expect_tx on `full`); CONSUMERS
//                     consumer warps release each stage on `empty`
// out[i] = in[i] + 1 on u32; n a multiple of 4. Consumers read other threads' vectors, so the
// pipeline's barriers are what make the result right.
#include <cuasync/pipeline.cuh>

#ifndef STAGES
#define STAGES 4
#endif
#ifndef VPT
#define VPT 2              // unified: 16-byte vectors per thread per stage
#endif
#ifndef CONSUMERS
#define CONSUMERS 4
#endif
#ifndef TILE_BYTES
#define TILE_BYTES 8192    // partitioned: bytes per stage
#endif
#define UTHREADS 256
#define UTILE_VECS (UTHREADS * VPT)
static_assert(TILE_BYTES % 16 == 0, "TILE_BYTES must be a multiple of 16");

typedef unsigned long long u64;
namespace cpa = cuasync::cp_async;

template <int S>
__device__ __forceinline__ void unified(uint4 *out, const uint4 *in, u64 n)
{
    extern __shared__ __align__(16) uint4 ring[];   // S * UTILE_VECS
    __shared__ cuasync::pipeline_ring<S> pipe;
    typedef typename cuasync::pipeline_ring<S>::state state;
    const u64 nvec = n / 4, ntiles = (nvec + UTILE_VECS - 1) / UTILE_VECS;
    const u64 mine = blockIdx.x < ntiles ? (ntiles - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
    if (threadIdx.x == 0) pipe.init(UTHREADS, UTHREADS);
    __syncthreads();
    state prod = state::producer_start(), cons = state::consumer_start();
    auto produce = [&](u64 j) {
        pipe.producer_acquire(prod);
        const u64 base = (blockIdx.x + j * gridDim.x) * (u64)UTILE_VECS;
        for (int k = 0; k < VPT; ++k) {
            const int v = threadIdx.x + k * UTHREADS;
            if (base + v < nvec) cpa::copy_cg(&ring[prod.index * UTILE_VECS + v], &in[base + v]);
        }
        pipe.producer_commit(prod);
        prod.advance();
    };
    for (u64 j = 0; j < mine && j < (u64)(S - 1); ++j) produce(j);
    for (u64 j = 0; j < mine; ++j) {
        if (j + S - 1 < mine) produce(j + S - 1);
        pipe.consumer_wait(cons);
        const u64 base = (blockIdx.x + j * gridDim.x) * (u64)UTILE_VECS;
        for (int k = 0; k < VPT; ++k) {
            const int v = (threadIdx.x + k * UTHREADS + 32) % UTILE_VECS;
            if (base + v >= nvec) continue;
            const uint4 x = ring[cons.index * UTILE_VECS + v];
            out[base + v] = make_uint4(x.x + 1, x.y + 1, x.z + 1, x.w + 1);
        }
        pipe.consumer_release(cons);
        cons.advance();
    }
}

extern "C" __global__ void __launch_bounds__(UTHREADS) pipe_single(uint4 *out, const uint4 *in, u64 n) { unified<1>(out, in, n); }
extern "C" __global__ void __launch_bounds__(UTHREADS) pipe_unified(uint4 *out, const uint4 *in, u64 n) { unified<STAGES>(out, in, n); }

extern "C" __global__ void __launch_bounds__(32 * (CONSUMERS + 1)) pipe_partitioned(uint4 *out, const uint4 *in, u64 n)
{
    extern __shared__ __align__(128) uint4 ring[];  // STAGES * TILE_BYTES
    __shared__ cuasync::pipeline_ring<STAGES> pipe;
    typedef cuasync::pipeline_ring<STAGES>::state state;
    constexpr int TV = TILE_BYTES / 16;
    const u64 nvec = n / 4, ntiles = (nvec + TV - 1) / TV;
    const u64 mine = blockIdx.x < ntiles ? (ntiles - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
    if (threadIdx.x == 0) pipe.init(1, CONSUMERS * 32);
    __syncthreads();
    if (threadIdx.x < 32) {                          // the producer warp
        state st = state::producer_start();
        for (u64 j = 0; j < mine; ++j, st.advance()) {
            const u64 base = (blockIdx.x + j * gridDim.x) * (u64)TV;
            const unsigned bytes = (unsigned)((nvec - base < (u64)TV ? nvec - base : (u64)TV) * 16);
            pipe.producer_acquire(st);
            if (cuasync::bulk::elect_one()) {
                pipe.producer_expect_bytes(st, bytes);
                cuasync::bulk::load(ring + st.index * TV, in + base, bytes, pipe.full_barrier(st));
            }
            __syncwarp();
        }
    } else {                                         // consumer warps
        state st = state::consumer_start();
        for (u64 j = 0; j < mine; ++j, st.advance()) {
            const u64 base = (blockIdx.x + j * gridDim.x) * (u64)TV;
            pipe.consumer_wait(st);
            for (int v = threadIdx.x - 32; v < TV; v += CONSUMERS * 32) {
                if (base + v >= nvec) continue;
                const uint4 x = ring[st.index * TV + v];
                out[base + v] = make_uint4(x.x + 1, x.y + 1, x.z + 1, x.w + 1);
            }
            pipe.consumer_release(st);
        }
    }
}
