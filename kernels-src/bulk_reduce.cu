// bulk_reduce.cu — pattern 9: cp.reduce.async.bulk add into global memory. Each tile of `in` is
// bulk-loaded into shared memory, then added element-wise into `out` by one bulk reduction
// (performed atomically per element by the memory system). out[i] += in[i]; u32 and f32 kernels.
// n a multiple of 4 elements (16 bytes).
#include <cuasync/mbarrier.cuh>
#include <cuasync/ring.cuh>       // stage_state
#include <cuasync/bulk.cuh>

#ifndef TILE_BYTES
#define TILE_BYTES 16384
#endif
#define STAGES 2

typedef unsigned long long u64;
namespace mb = cuasync::mbarrier;
namespace bulk = cuasync::bulk;

template <typename T>
__device__ __forceinline__ void reduce_tiles(T *out, const T *in, u64 n)
{
    extern __shared__ __align__(128) unsigned char ring[];   // STAGES * TILE_BYTES
    __shared__ cuasync::mbarrier_t full[STAGES];
    if (threadIdx.x != 0) return;                             // one thread drives the copy engine
    constexpr unsigned TE = TILE_BYTES / sizeof(T);
    const u64 ntiles = (n + TE - 1) / TE;
    const u64 mine = blockIdx.x < ntiles ? (ntiles - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
    for (int s = 0; s < STAGES; ++s) mb::init(&full[s], 1);
    mb::fence_init();
    auto span = [&](u64 j, u64 *first) {
        *first = (blockIdx.x + j * gridDim.x) * (u64)TE;
        return (unsigned)((n - *first < TE ? n - *first : TE) * sizeof(T));
    };
    auto issue = [&](u64 j) {
        u64 first;
        const unsigned bytes = span(j, &first);
        mb::arrive_expect_tx(&full[j % STAGES], bytes);
        bulk::load(ring + (j % STAGES) * TILE_BYTES, in + first, bytes, &full[j % STAGES]);
    };
    for (u64 j = 0; j < mine && j < STAGES; ++j) issue(j);
    auto st = cuasync::stage_state<STAGES>::consumer_start();
    for (u64 j = 0; j < mine; ++j, st.advance()) {
        mb::wait_parity(&full[st.index], st.phase);
        u64 first;
        const unsigned bytes = span(j, &first);
        bulk::reduce_add(out + first, reinterpret_cast<const T *>(ring + (j % STAGES) * TILE_BYTES), bytes);
        bulk::commit_group();
        if (j + STAGES < mine) {
            bulk::wait_group_read<0>();                       // the reduction has read the stage
            issue(j + STAGES);
        }
    }
    bulk::wait_group<0>();
}

extern "C" __global__ void __launch_bounds__(32) reduce_add_u32(unsigned *out, const unsigned *in, u64 n) { reduce_tiles(out, in, n); }
extern "C" __global__ void __launch_bounds__(32) reduce_add_f32(float *out, const float *in, u64 n) { reduce_tiles(out, in, n); }
