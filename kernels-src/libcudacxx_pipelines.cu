// libcudacxx_pipelines.cu — pattern 6: pattern 5's three pipelines written only with libcu++
// (cuda::pipeline, cuda::barrier, cuda::memcpy_async) and cooperative groups, as a user's
// existing kernel would be: compiled by NVRTC through cuasync with no cuasync header.
//   cxx_single       cuda::barrier + block-wide cuda::memcpy_async, one tile at a time
//   cxx_unified      cuda::pipeline over the whole block, STAGES stages
//   cxx_partitioned  cuda::pipeline with producer/consumer roles: warp 0 produces
// out[i] = in[i] + 1 on u32; n a multiple of 4.
#include <cuda/barrier>
#include <cuda/pipeline>
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>

#ifndef STAGES
#define STAGES 4
#endif
#define THREADS 256
#define TILE_VECS 512      // 16-byte vectors per stage (8 KiB)

typedef unsigned long long u64;
namespace cg = cooperative_groups;

__device__ __forceinline__ void consume(uint4 *out, const uint4 *stage, u64 base, u64 nvec, int first, int step)
{
    for (int v = first; v < TILE_VECS; v += step) {
        const int r = (v + 32) % TILE_VECS;    // another warp's vector
        if (base + r >= nvec) continue;
        const uint4 x = stage[r];
        out[base + r] = make_uint4(x.x + 1, x.y + 1, x.z + 1, x.w + 1);
    }
}

__device__ __forceinline__ unsigned tile_bytes(u64 base, u64 nvec)
{
    return (unsigned)((nvec - base < (u64)TILE_VECS ? nvec - base : (u64)TILE_VECS) * 16);
}

extern "C" __global__ void __launch_bounds__(THREADS) cxx_single(uint4 *out, const uint4 *in, u64 n)
{
    __shared__ __align__(16) uint4 stage[TILE_VECS];
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    auto block = cg::this_thread_block();
    if (block.thread_rank() == 0) init(&bar, block.size());
    block.sync();
    const u64 nvec = n / 4, ntiles = (nvec + TILE_VECS - 1) / TILE_VECS;
    for (u64 t = blockIdx.x; t < ntiles; t += gridDim.x) {
        const u64 base = t * TILE_VECS;
        cuda::memcpy_async(block, stage, in + base, cuda::aligned_size_t<16>(tile_bytes(base, nvec)), bar);
        bar.arrive_and_wait();                     // the copy has landed, for every thread
        consume(out, stage, base, nvec, block.thread_rank(), THREADS);
        block.sync();                              // the stage is overwritten next tile
    }
}

extern "C" __global__ void __launch_bounds__(THREADS) cxx_unified(uint4 *out, const uint4 *in, u64 n)
{
    __shared__ __align__(16) uint4 ring[STAGES][TILE_VECS];
    __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, STAGES> state;
    auto block = cg::this_thread_block();
    auto pipe = cuda::make_pipeline(block, &state);
    const u64 nvec = n / 4, ntiles = (nvec + TILE_VECS - 1) / TILE_VECS;
    const u64 mine = blockIdx.x < ntiles ? (ntiles - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
    u64 fetched = 0;
    for (u64 j = 0; j < mine; ++j) {
        for (; fetched < mine && fetched < j + STAGES; ++fetched) {   // keep STAGES tiles in flight
            const u64 base = (blockIdx.x + fetched * gridDim.x) * (u64)TILE_VECS;
            pipe.producer_acquire();
            cuda::memcpy_async(block, ring[fetched % STAGES], in + base,
                               cuda::aligned_size_t<16>(tile_bytes(base, nvec)), pipe);
            pipe.producer_commit();
        }
        pipe.consumer_wait();
        const u64 base = (blockIdx.x + j * gridDim.x) * (u64)TILE_VECS;
        consume(out, ring[j % STAGES], base, nvec, block.thread_rank(), THREADS);
        pipe.consumer_release();   // the next acquire of this stage waits for every thread's release
    }
}

extern "C" __global__ void __launch_bounds__(THREADS) cxx_partitioned(uint4 *out, const uint4 *in, u64 n)
{
    __shared__ __align__(16) uint4 ring[STAGES][TILE_VECS];
    __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, STAGES> state;
    auto block = cg::this_thread_block();
    const bool producer = block.thread_rank() < 32;
    const auto role = producer ? cuda::pipeline_role::producer : cuda::pipeline_role::consumer;
    auto pipe = cuda::make_pipeline(block, &state, role);
    auto warp = cg::tiled_partition<32>(block);
    const u64 nvec = n / 4, ntiles = (nvec + TILE_VECS - 1) / TILE_VECS;
    const u64 mine = blockIdx.x < ntiles ? (ntiles - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
    for (u64 j = 0; j < mine; ++j) {
        const u64 base = (blockIdx.x + j * gridDim.x) * (u64)TILE_VECS;
        if (producer) {
            pipe.producer_acquire();
            cuda::memcpy_async(warp, ring[j % STAGES], in + base, cuda::aligned_size_t<16>(tile_bytes(base, nvec)), pipe);
            pipe.producer_commit();
        } else {
            pipe.consumer_wait();
            consume(out, ring[j % STAGES], base, nvec, block.thread_rank() - 32, THREADS - 32);
            pipe.consumer_release();
        }
    }
}
