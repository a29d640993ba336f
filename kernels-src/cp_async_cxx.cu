// cp_async_cxx.cu — cp_async_copy.cu's streaming copy through libcu++ only: cuda::pipeline over
// the whole block (unified) with STAGES stages, each tile issued with the block-wide
// cuda::memcpy_async as a user of libcu++ writes it. The second yardstick of
// examples/cp_async_sweep.lua. libcu++ sizes its cp.async copies from the alignment it is shown,
// the larger of aligned_size_t<VEC> and the element type's: the tile goes as VEC-byte elements
// (16: uint4, cp.async.cg 16; 8: uint2 and 4: unsigned, cp.async.ca). The stores are the plan
// kernel's (one vector per pass, not unrolled: docs/cp-async.md says why). The ring starts on an
// ALIGN-byte boundary, as in cp_async_ring.cu (ALIGN = 16: the layout as declared).
#include <cuda/pipeline>
#include <cooperative_groups.h>

#ifndef STAGES
#define STAGES 4
#endif
#ifndef TILE
#define TILE 16384
#endif
#ifndef ALIGN
#define ALIGN 128
#endif
#ifndef VEC
#define VEC 16
#endif
#define THREADS 256
#define VECS (TILE / 16)

typedef unsigned long long u64;
namespace cg = cooperative_groups;
#if VEC == 16
typedef uint4 elem;
#elif VEC == 8
typedef uint2 elem;
#elif VEC == 4
typedef unsigned elem;
#else
#error "VEC is 16, 8 or 4 bytes"
#endif

extern "C" __global__ void __launch_bounds__(THREADS) cxx_copy(uint4 *out, const uint4 *in, u64 tiles)
{
    extern __shared__ __align__(16) unsigned char raw[];   // STAGES * VECS vectors + ALIGN - 16
    const unsigned at = (unsigned)__cvta_generic_to_shared(raw);
    uint4 *const ring = reinterpret_cast<uint4 *>(raw + ((ALIGN - (at & (ALIGN - 1u))) & (ALIGN - 1u)));
    __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, STAGES> state;
    auto block = cg::this_thread_block();
    auto pipe = cuda::make_pipeline(block, &state);
    const u64 n = blockIdx.x < tiles ? (tiles - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
    u64 fetched = 0;
    for (u64 i = 0; i < n; ++i) {
        for (; fetched < n && fetched < i + STAGES; ++fetched) {   // keep STAGES tiles in flight
            pipe.producer_acquire();
            cuda::memcpy_async(block, reinterpret_cast<elem *>(ring + (fetched % STAGES) * VECS),
                               reinterpret_cast<const elem *>(in + (blockIdx.x + fetched * gridDim.x) * (u64)VECS),
                               cuda::aligned_size_t<VEC>(TILE), pipe);
            pipe.producer_commit();
        }
        pipe.consumer_wait();
        uint4 *o = out + (blockIdx.x + i * gridDim.x) * (u64)VECS;
        const uint4 *stage = ring + (i % STAGES) * VECS;
#pragma unroll 1
        for (int e = threadIdx.x; e < VECS; e += THREADS) {
            const int v = (e + 32) % VECS;
            o[v] = stage[v];
        }
        pipe.consumer_release();
    }
}
