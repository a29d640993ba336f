// wgmma_rs.cu — one product of attention_fwd.cu in isolation, for spec/kernels/attention_spec.lua:
// D (64 x N, f32) = P (64 x 64, bf16) * V (64 x N, bf16), with P taken into registers in the
// m64nNk16 accumulator layout (wgmma::acc_row/acc_col: what the softmax leaves) and packed into
// A fragments (pack_bf16x2), and V in shared memory as TMA's 128B swizzle writes a 64 x N tile
// (N / 64 column blocks of 64 rows x 128 bytes, 16-byte chunk c of row r at c XOR r % 8), read
// MN-major (mma_rs_m64nNk16_bf16_tb with desc_mnmajor). One warpgroup.
#include <cuasync/wgmma.cuh>
#include <cuasync/bulk.cuh>

namespace wg = cuasync::wgmma;

__device__ __forceinline__ void mma(float (&d)[32], const unsigned (&a)[4], unsigned long long b) { wg::mma_rs_m64n64k16_bf16_tb(d, a, b, true); }
__device__ __forceinline__ void mma(float (&d)[64], const unsigned (&a)[4], unsigned long long b) { wg::mma_rs_m64n128k16_bf16_tb(d, a, b, true); }

template <unsigned N>
__device__ void pv(const unsigned short *P, const unsigned short *V, float *D)
{
    __shared__ __align__(1024) unsigned short v[64 * 128];
    const unsigned tid = threadIdx.x;
    for (unsigned e = tid; e < 64u * N; e += 128u) {
        const unsigned r = e / N, col = e % N, blk = col / 64u, cb = col % 64u;
        v[blk * 64u * 64u + r * 64u + ((cb / 8u) ^ (r % 8u)) * 8u + cb % 8u] = V[e];
    }
    cuasync::bulk::fence_proxy_async_shared();   // generic writes, then the tensor core reads them
    __syncthreads();
    float d[N / 2];
#pragma unroll
    for (unsigned i = 0; i < N / 2; ++i) d[i] = 0.f;
    unsigned a[4][4];
#pragma unroll
    for (unsigned i = 0; i < 32; i += 2) {
        const unsigned row = wg::acc_row(i, tid), col = wg::acc_col(i, tid);
        a[i / 8u][(i % 8u) / 2u] = (unsigned)P[row * 64u + col] | ((unsigned)P[row * 64u + col + 1u] << 16);
    }
    wg::fence();
#pragma unroll
    for (unsigned kb = 0; kb < 4; ++kb) mma(d, a[kb], wg::desc_advance(wg::desc_mnmajor(v, 64u * 128u), 16u * 128u * kb));
    wg::commit_group();
    wg::wait_group<0>();
    wg::fence_operands(d);
#pragma unroll
    for (unsigned i = 0; i < N / 2; ++i) D[wg::acc_row(i, tid) * N + wg::acc_col(i, tid)] = d[i];
}

extern "C" __global__ void __launch_bounds__(128) pv64(const unsigned short *P, const unsigned short *V, float *D) { pv<64>(P, V, D); }
extern "C" __global__ void __launch_bounds__(128) pv128(const unsigned short *P, const unsigned short *V, float *D) { pv<128>(P, V, D); }
