// tensor_copy.cu — pattern 8: tensor copies (tile mode) through tensor maps built in Lua.
//   tensor_add_one<N>  one box per block: TMA load (complete_tx on an mbarrier), +1 on every u32
//                      in shared memory, proxy fence, TMA store; N = 1, 2, 3, 5 dimensions. A box
//                      that hangs over the edge loads zeros there and its store clips.
//   tensor_reduce<N>   one box per block: TMA load, then cp.reduce.async.bulk.tensor add into out
//   tensor_multicast   2D; in a cluster, rank 0 loads the box once with .multicast::cluster into
//                      every block's shared memory; each block writes its own copy to out
//                      (out + cluster index * cluster size * box + rank * box).
// Box coordinates: blockIdx.x (or the cluster index) split over the box counts nb[0..4].
#include <cuasync/mbarrier.cuh>
#include <cuasync/bulk.cuh>
#include <cuasync/tma.cuh>
#include <cuasync/cluster.cuh>

namespace mb = cuasync::mbarrier;
namespace tma = cuasync::tma;
using cuasync::tensormap;

struct box_at { int c[5]; };

// The coordinates (element indices, innermost first) of box number `index`.
__device__ __forceinline__ box_at box_coords(unsigned index, const unsigned (&nb)[5], const unsigned (&box)[5])
{
    box_at at;
    for (int d = 0; d < 5; ++d) { at.c[d] = (int)((index % nb[d]) * box[d]); index /= nb[d]; }
    return at;
}

template <int N>
__device__ __forceinline__ void load(void *smem, const tensormap *map, cuasync::mbarrier_t *bar, const box_at &a)
{
    if (N == 1) tma::load(smem, map, bar, a.c[0]);
    else if (N == 2) tma::load(smem, map, bar, a.c[0], a.c[1]);
    else if (N == 3) tma::load(smem, map, bar, a.c[0], a.c[1], a.c[2]);
    else if (N == 4) tma::load(smem, map, bar, a.c[0], a.c[1], a.c[2], a.c[3]);
    else tma::load(smem, map, bar, a.c[0], a.c[1], a.c[2], a.c[3], a.c[4]);
}

template <int N>
__device__ __forceinline__ void store(const tensormap *map, const void *smem, const box_at &a, bool reduce)
{
    if (reduce) {
        if (N == 1) tma::reduce_add(map, smem, a.c[0]);
        else if (N == 2) tma::reduce_add(map, smem, a.c[0], a.c[1]);
        else if (N == 3) tma::reduce_add(map, smem, a.c[0], a.c[1], a.c[2]);
        else if (N == 4) tma::reduce_add(map, smem, a.c[0], a.c[1], a.c[2], a.c[3]);
        else tma::reduce_add(map, smem, a.c[0], a.c[1], a.c[2], a.c[3], a.c[4]);
    } else {
        if (N == 1) tma::store(map, smem, a.c[0]);
        else if (N == 2) tma::store(map, smem, a.c[0], a.c[1]);
        else if (N == 3) tma::store(map, smem, a.c[0], a.c[1], a.c[2]);
        else if (N == 4) tma::store(map, smem, a.c[0], a.c[1], a.c[2], a.c[3]);
        else tma::store(map, smem, a.c[0], a.c[1], a.c[2], a.c[3], a.c[4]);
    }
}

template <int N, bool REDUCE>
__device__ __forceinline__ void box_round_trip(const tensormap *in, const tensormap *out, unsigned box_bytes,
                                               const unsigned (&nb)[5], const unsigned (&box)[5])
{
    extern __shared__ __align__(1024) unsigned tile[];
    __shared__ cuasync::mbarrier_t bar;
    const box_at at = box_coords(blockIdx.x, nb, box);
    if (threadIdx.x == 0) {
        mb::init(&bar, 1);
        mb::fence_init();
        mb::arrive_expect_tx(&bar, box_bytes);
        load<N>(tile, in, &bar, at);
    }
    __syncthreads();                                   // the barrier is initialised for every waiter
    mb::wait_parity(&bar, 0);
    if (!REDUCE) {
        for (unsigned k = threadIdx.x; k < box_bytes / 4; k += blockDim.x) tile[k] += 1;
        cuasync::bulk::fence_proxy_async_shared();     // generic writes, then the async-proxy store
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        store<N>(out, tile, at, REDUCE);
        cuasync::bulk::commit_group();
        cuasync::bulk::wait_group<0>();
    }
}

#define TENSOR_KERNELS(N)                                                                               \
    extern "C" __global__ void tensor_add_one_##N##d(const __grid_constant__ tensormap in,              \
        const __grid_constant__ tensormap out, unsigned box_bytes, unsigned n0, unsigned n1, unsigned n2, \
        unsigned n3, unsigned n4, unsigned b0, unsigned b1, unsigned b2, unsigned b3, unsigned b4)      \
    {                                                                                                   \
        const unsigned nb[5] = { n0, n1, n2, n3, n4 }, box[5] = { b0, b1, b2, b3, b4 };                 \
        box_round_trip<N, false>(&in, &out, box_bytes, nb, box);                                        \
    }                                                                                                   \
    extern "C" __global__ void tensor_reduce_##N##d(const __grid_constant__ tensormap in,               \
        const __grid_constant__ tensormap out, unsigned box_bytes, unsigned n0, unsigned n1, unsigned n2, \
        unsigned n3, unsigned n4, unsigned b0, unsigned b1, unsigned b2, unsigned b3, unsigned b4)      \
    {                                                                                                   \
        const unsigned nb[5] = { n0, n1, n2, n3, n4 }, box[5] = { b0, b1, b2, b3, b4 };                 \
        box_round_trip<N, true>(&in, &out, box_bytes, nb, box);                                         \
    }
TENSOR_KERNELS(1)
TENSOR_KERNELS(2)
TENSOR_KERNELS(3)
TENSOR_KERNELS(5)

extern "C" __global__ void tensor_multicast(const __grid_constant__ tensormap in, unsigned *out, unsigned box_bytes,
                                            unsigned n0, unsigned b0, unsigned b1)
{
    extern __shared__ __align__(1024) unsigned tile[];
    __shared__ cuasync::mbarrier_t bar;
    const unsigned rank = cuasync::cluster::rank(), csize = cuasync::cluster::size();
    const unsigned cluster_index = blockIdx.x / csize;
    if (threadIdx.x == 0) {
        mb::init(&bar, 1);
        mb::fence_init();                              // visible to the cluster and the async proxy
    }
    cuasync::cluster::sync();                          // every block's barrier exists before the copy
    if (threadIdx.x == 0) {
        mb::arrive_expect_tx(&bar, box_bytes);         // each block expects the whole box
        if (rank == 0) {
            const int c0 = (int)((cluster_index % n0) * b0), c1 = (int)((cluster_index / n0) * b1);
            tma::load_multicast(tile, &in, &bar, (unsigned short)((1u << csize) - 1), c0, c1);
        }
    }
    __syncthreads();
    mb::wait_parity(&bar, 0);
    const unsigned words = box_bytes / 4;
    unsigned *mine = out + ((unsigned long long)cluster_index * csize + rank) * words;
    for (unsigned k = threadIdx.x; k < words; k += blockDim.x) mine[k] = tile[k];
    cuasync::cluster::sync();                          // no block leaves while the copy may still land
}
