// cp_async_ring.cu — cp_async_copy.cu's streaming copy written by hand on pipeline_ring<N>, as
// a kernel engineer would without a plan: the vector count, the stage offsets and the barrier
// counts are computed here. The yardstick the plan-built kernel is measured against
// (examples/cp_async_sweep.lua): unified, every thread copies TILE / VEC / THREADS vectors of VEC
// bytes per stage with cp.async (.cg for 16 bytes, .ca for 8 and 4, as a plan chooses) and
// commits them with cp.async.mbarrier.arrive.noinc; the stores are the plan kernel's (one
// vector per pass, not unrolled: docs/cp-async.md says why).
// The ring starts on an ALIGN-byte boundary of dynamic shared memory (the launch gives ALIGN - 16
// bytes of slack): 128 by default; ALIGN = 16 keeps the layout as declared, after the static
// barriers, which puts the ring at 16 mod 32 bytes for odd STAGES (docs/cp-async.md: ~8% slower).
#include <cuasync/ring.cuh>

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
#define CPT (TILE / VEC / THREADS)   // copies per thread per stage
static_assert(VEC == 16 || VEC == 8 || VEC == 4, "VEC is 16, 8 or 4 bytes");
static_assert(TILE % (VEC * THREADS) == 0, "TILE must be a multiple of VEC x THREADS");

typedef unsigned long long u64;
namespace cpa = cuasync::cp_async;

extern "C" __global__ void __launch_bounds__(THREADS) ring_copy(uint4 *out, const uint4 *in, u64 tiles)
{
    extern __shared__ __align__(16) unsigned char raw[];   // STAGES * VECS vectors + ALIGN - 16
    uint4 *const ring = reinterpret_cast<uint4 *>(raw + ((ALIGN - (cuasync::smem_addr(raw) & (ALIGN - 1u))) & (ALIGN - 1u)));
    __shared__ cuasync::pipeline_ring<STAGES> pipe;
    typedef cuasync::pipeline_ring<STAGES>::state state;
    const u64 n = blockIdx.x < tiles ? (tiles - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
    if (threadIdx.x == 0) pipe.init(THREADS, THREADS);
    __syncthreads();
    state prod = state::producer_start(), cons = state::consumer_start();
    auto produce = [&](u64 i) {
        pipe.producer_acquire(prod);
        const unsigned char *src = reinterpret_cast<const unsigned char *>(in + (blockIdx.x + i * gridDim.x) * (u64)VECS);
        unsigned char *dst = reinterpret_cast<unsigned char *>(ring + prod.index * VECS);
#pragma unroll
        for (int k = 0; k < CPT; ++k) {
            const int at = (threadIdx.x + k * THREADS) * VEC;
            if (VEC == 16) cpa::copy_cg(dst + at, src + at);
            else cpa::copy_ca<VEC>(dst + at, src + at);
        }
        pipe.producer_commit(prod);
        prod.advance();
    };
    for (u64 i = 0; i < n && i < (u64)STAGES; ++i) produce(i);
    for (u64 i = 0; i < n; ++i) {
        pipe.consumer_wait(cons);
        uint4 *o = out + (blockIdx.x + i * gridDim.x) * (u64)VECS;
#pragma unroll 1
        for (int e = threadIdx.x; e < VECS; e += THREADS) {
            const int v = (e + 32) % VECS;
            o[v] = ring[cons.index * VECS + v];
        }
        pipe.consumer_release(cons);
        cons.advance();
        if (i + STAGES < n) produce(i + STAGES);
    }
}
