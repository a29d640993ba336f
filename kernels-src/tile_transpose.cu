// tile_transpose.cu — out = transpose(in) for an f32 matrix, one 32x32 tile per block: a tensor
// load of the tile, a transpose in shared memory, a tensor store at the mirrored coordinates.
// SWIZZLE_SPAN is the maps' swizzle span in bytes (0 for none, 128 for 128B): the kernel finds
// element (col, row) where TMA put it (tma::swizzled: the model cuasync.swizzle.layout computes in
// Lua). Reading a column of an unswizzled tile hits one bank 32 times; with 128B swizzle the
// 16-byte chunks of 8 consecutive rows sit in 8 different slots.
#include <cuasync/mbarrier.cuh>
#include <cuasync/bulk.cuh>
#include <cuasync/tma.cuh>

#ifndef SWIZZLE_SPAN
#define SWIZZLE_SPAN 128
#endif
static_assert(SWIZZLE_SPAN == 0 || SWIZZLE_SPAN == 32 || SWIZZLE_SPAN == 64 || SWIZZLE_SPAN == 128,
              "SWIZZLE_SPAN must be 0, 32, 64 or 128");

// The shared-memory byte offset of element (col, row) of a 32-column f32 tile, where the map put it.
__device__ __forceinline__ unsigned at(unsigned col, unsigned row)
{
    return cuasync::tma::swizzled(row * 128 + col * 4, SWIZZLE_SPAN);
}

extern "C" __global__ void __launch_bounds__(256) tile_transpose(const __grid_constant__ cuasync::tensormap in,
    const __grid_constant__ cuasync::tensormap out, unsigned tiles_x)
{
    __shared__ __align__(1024) unsigned char a[32 * 32 * 4];
    __shared__ __align__(1024) unsigned char b[32 * 32 * 4];
    __shared__ cuasync::mbarrier_t bar;
    namespace mb = cuasync::mbarrier;
    const int tx = (int)(blockIdx.x % tiles_x) * 32, ty = (int)(blockIdx.x / tiles_x) * 32;
    if (threadIdx.x == 0) {
        mb::init(&bar, 1);
        mb::fence_init();
        mb::arrive_expect_tx(&bar, sizeof a);
        cuasync::tma::load(a, &in, &bar, tx, ty);
    }
    __syncthreads();
    mb::wait_parity(&bar, 0);
    const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    for (unsigned r = warp; r < 32; r += 8)   // out row r = in column r; lanes read down the column
        *(float *)(b + at(lane, r)) = *(const float *)(a + at(r, lane));
    cuasync::bulk::fence_proxy_async_shared();   // generic writes, then the async-proxy store
    __syncthreads();
    if (threadIdx.x == 0) {
        cuasync::tma::store(&out, b, ty, tx);
        cuasync::bulk::commit_group();
        cuasync::bulk::wait_group<0>();
    }
}
