// tensor_probe.cu — kernels that show what the TMA unit does, for specs and examples to compare
// with the Lua models (cuasync.swizzle, the OOB and im2col rules):
//   tensormap_echo      the map parameter's address mod 64 and its 128 bytes, as the kernel sees them
//   tensor_image_2d     one 2D tile-mode load into poisoned shared memory, then the raw image out
//   tensor_image_im2col one 3D im2col load (one offset), the raw image out
//   tensor_store_box_2d a box of base + k (u32) stored at (c0, c1): a store clips at the edges
// The image kernels wait a bounded time: status[0] = 1 when the load completed, 2 when it did not
// (a byte count that never arrives reports instead of hanging); status[1] = the image's shared
// address mod 1024.
#include <cuasync/mbarrier.cuh>
#include <cuasync/bulk.cuh>
#include <cuasync/tma.cuh>

namespace mb = cuasync::mbarrier;
namespace tma = cuasync::tma;
using cuasync::tensormap;

extern "C" __global__ void tensormap_echo(const __grid_constant__ tensormap map, unsigned long long *out)
{
    if (threadIdx.x == 0) out[0] = (unsigned long long)&map % 64;
    if (threadIdx.x < 16) out[1 + threadIdx.x] = map.opaque[threadIdx.x];
}

extern __shared__ __align__(1024) unsigned char image[];

// Poison image_bytes of shared memory, order those generic writes before the async proxy's, and
// initialise the barrier for one arrival plus box_bytes.
__device__ __forceinline__ void prepare_image(cuasync::mbarrier_t *bar, unsigned box_bytes, unsigned image_bytes)
{
    for (unsigned k = threadIdx.x; k < image_bytes; k += blockDim.x) image[k] = 0xA5;
    cuasync::bulk::fence_proxy_async_shared();
    if (threadIdx.x == 0) {
        mb::init(bar, 1);
        mb::fence_init();
    }
    __syncthreads();
}

__device__ __forceinline__ void finish_image(cuasync::mbarrier_t *bar, unsigned char *out, unsigned image_bytes,
                                             unsigned *status)
{
    __shared__ unsigned done;
    if (threadIdx.x == 0) {
        const bool ok = mb::wait_parity_bounded(bar, 0, 200000);
        done = ok;
        status[0] = ok ? 1 : 2;
        status[1] = cuasync::smem_addr(image) % 1024;   // the swizzle pattern assumes 0
    }
    __syncthreads();
    if (!done) return;
    for (unsigned k = threadIdx.x; k < image_bytes; k += blockDim.x) out[k] = image[k];
}

extern "C" __global__ void tensor_image_2d(const __grid_constant__ tensormap map, unsigned char *out,
                                           unsigned box_bytes, unsigned image_bytes, int c0, int c1, unsigned *status)
{
    __shared__ cuasync::mbarrier_t bar;
    prepare_image(&bar, box_bytes, image_bytes);
    if (threadIdx.x == 0) {
        mb::arrive_expect_tx(&bar, box_bytes);
        tma::load(image, &map, &bar, c0, c1);
    }
    finish_image(&bar, out, image_bytes, status);
}

extern "C" __global__ void tensor_image_im2col(const __grid_constant__ tensormap map, unsigned char *out,
                                               unsigned box_bytes, unsigned image_bytes, int c0, int c1, int c2,
                                               unsigned offset, unsigned *status)
{
    __shared__ cuasync::mbarrier_t bar;
    prepare_image(&bar, box_bytes, image_bytes);
    if (threadIdx.x == 0) {
        mb::arrive_expect_tx(&bar, box_bytes);
        tma::load_im2col(image, &map, &bar, c0, c1, c2, (unsigned short)offset);
    }
    finish_image(&bar, out, image_bytes, status);
}

extern "C" __global__ void tensor_store_box_2d(const __grid_constant__ tensormap map, unsigned base,
                                               unsigned box_bytes, int c0, int c1)
{
    unsigned *words = (unsigned *)image;
    for (unsigned k = threadIdx.x; k < box_bytes / 4; k += blockDim.x) words[k] = base + k;
    cuasync::bulk::fence_proxy_async_shared();     // generic writes, then the async-proxy store
    __syncthreads();
    if (threadIdx.x == 0) {
        tma::store(&map, image, c0, c1);
        cuasync::bulk::commit_group();
        cuasync::bulk::wait_group<0>();
    }
}
