// tx_rules.cu — the byte-count rules of cuasync.pipeline, asked of the hardware: one thread arms
// an mbarrier with `armed` transaction bytes, issues the loads of one stage, and reports whether
// the phase completed within a bounded wait. The spec arms the plan's tx_bytes (must complete)
// and tx_bytes +- 16 (must not); then the difference is settled by hand so that the barrier
// completes and the block exits with every copy landed.
// result[0] = completed within the bound, result[1] = completed after settling.
#include <cuasync/mbarrier.cuh>
#include <cuasync/cluster.cuh>
#include <cuasync/tma.cuh>

namespace mb = cuasync::mbarrier;

// One thread: a fresh barrier for one arrival, armed with `armed` bytes.
__device__ void arm(cuasync::mbarrier_t *bar, unsigned armed)
{
    mb::init(bar, 1);
    mb::fence_init();
    mb::arrive_expect_tx(bar, armed);
}

// Settle the difference between what was armed and what the plan derived, then wait again.
__device__ void settle(cuasync::mbarrier_t *bar, unsigned armed, unsigned derived, unsigned tries, unsigned *result)
{
    const bool done = mb::wait_parity_bounded(bar, 0, tries);
    if (!done) {
        if (armed > derived) mb::complete_tx(bar, armed - derived);
        else mb::expect_tx(bar, derived - armed);
    }
    result[0] = done ? 1u : 0u;
    result[1] = (done || mb::wait_parity_bounded(bar, 0, tries)) ? 1u : 0u;
}

// `boxes` 2D boxes side by side (x0 + j * box_x, y0), each box_smem bytes apart in shared memory.
extern "C" __global__ void tx_tiled(const __grid_constant__ cuasync::tensormap map, int x0, int y0, unsigned boxes,
    int box_x, unsigned box_smem, unsigned armed, unsigned derived, unsigned tries, unsigned *result)
{
    extern __shared__ __align__(1024) unsigned char buf[];
    __shared__ cuasync::mbarrier_t bar;
    if (threadIdx.x != 0) return;
    arm(&bar, armed);
    for (unsigned j = 0; j < boxes; ++j)
        cuasync::tma::load(buf + j * box_smem, &map, &bar, x0 + (int)j * box_x, y0);
    settle(&bar, armed, derived, tries, result);
}

// A rank-3 im2col load of the map's channels x pixels at pixel (w0, n0), offset 0.
extern "C" __global__ void tx_im2col(const __grid_constant__ cuasync::tensormap map, int w0, int n0,
    unsigned armed, unsigned derived, unsigned tries, unsigned *result)
{
    extern __shared__ __align__(1024) unsigned char buf[];
    __shared__ cuasync::mbarrier_t bar;
    if (threadIdx.x != 0) return;
    arm(&bar, armed);
    cuasync::tma::load_im2col(buf, &map, &bar, 0, w0, n0, (unsigned short)0);
    settle(&bar, armed, derived, tries, result);
}

// A cluster along x: block r issues slice r (box at x0 + r * box_x) multicast to every block;
// each block's barrier receives every slice. result is per block (2 words each).
extern "C" __global__ void tx_multicast(const __grid_constant__ cuasync::tensormap map, int x0, int y0, int box_x,
    unsigned box_smem, unsigned armed, unsigned derived, unsigned tries, unsigned *result)
{
    extern __shared__ __align__(1024) unsigned char buf[];
    __shared__ cuasync::mbarrier_t bar;
    const unsigned r = cuasync::cluster::rank(), n = cuasync::cluster::size();
    if (threadIdx.x == 0) {
        mb::init(&bar, 1);
        mb::fence_init();
    }
    cuasync::cluster::sync();   // every block's barrier is initialized before any slice lands
    if (threadIdx.x == 0) {
        mb::arrive_expect_tx(&bar, armed);
        cuasync::tma::load_multicast(buf + r * box_smem, &map, &bar, (unsigned short)((1u << n) - 1u),
                                     x0 + (int)r * box_x, y0);
        settle(&bar, armed, derived, tries, result + 2 * r);
    }
    cuasync::cluster::sync();   // no block exits while a peer's slice may still land in it
}
