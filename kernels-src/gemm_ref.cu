// gemm_ref.cu — the reference and the helpers of the GEMM checks: a simple correct C = A * B^T
// (bf16 in, f32 accumulate), fresh random bf16 data from a seed, and a comparison that counts the
// elements outside a tolerance. spec/kernels/gemm_spec.lua checks the reference against a CPU GEMM.
#include <cuda_bf16.h>

// 32 x 32 output tiles, one thread an output, K in steps of 32 through shared memory (as f32):
// simple, coalesced, and correct for any M, N, K. Launch: grid (ceil(N/32), ceil(M/32)), block (32, 32).
extern "C" __global__ void __launch_bounds__(1024) gemm_ref(const __nv_bfloat16 *A, const __nv_bfloat16 *B, float *C,
                                                           unsigned M, unsigned N, unsigned K)
{
    __shared__ float a[32][33], b[32][33];
    const unsigned tx = threadIdx.x, ty = threadIdx.y;
    const unsigned m = blockIdx.y * 32u + ty, n = blockIdx.x * 32u + tx;
    float s = 0.f;
    for (unsigned k0 = 0; k0 < K; k0 += 32u) {
        const unsigned k = k0 + tx;
        const unsigned am = blockIdx.y * 32u + ty, bn = blockIdx.x * 32u + ty;
        a[ty][tx] = (am < M && k < K) ? __bfloat162float(A[(size_t)am * K + k]) : 0.f;
        b[ty][tx] = (bn < N && k < K) ? __bfloat162float(B[(size_t)bn * K + k]) : 0.f;
        __syncthreads();
#pragma unroll 8
        for (unsigned j = 0; j < 32u; ++j) s += a[ty][j] * b[tx][j];
        __syncthreads();
    }
    if (m < M && n < N) C[(size_t)m * N + n] = s;
}

// bf16 values in [-1, 1) from a hash of (seed, index): fresh data every seed.
extern "C" __global__ void fill_bf16(__nv_bfloat16 *p, unsigned long long n, unsigned seed)
{
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        unsigned x = (unsigned)i * 0x9E3779B1u ^ seed ^ (unsigned)(i >> 32) * 0x85EBCA77u;
        x ^= x >> 16; x *= 0x7FEB352Du; x ^= x >> 15; x *= 0x846CA68Bu; x ^= x >> 16;
        p[i] = __float2bfloat16((float)(x >> 8) * (2.0f / 16777216.0f) - 1.0f);
    }
}

// out[0] += the elements with |got - want| > atol + rtol * |want|; out[1] = the largest |got - want| (as bits).
extern "C" __global__ void compare_f32(const float *got, const float *want, unsigned long long n, float atol, float rtol,
                                       unsigned *out)
{
    unsigned bad = 0;
    float worst = 0.f;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        const float d = fabsf(got[i] - want[i]);
        if (!(d <= atol + rtol * fabsf(want[i]))) ++bad;
        if (d != d) worst = __int_as_float(0x7f800000);   // a NaN is the worst
        else if (d > worst) worst = d;
    }
    if (bad) atomicAdd(out, bad);
    atomicMax(out + 1, __float_as_uint(worst));
}

// compare_f32 for a bf16 output (got) against the f32 reference.
extern "C" __global__ void compare_bf16(const __nv_bfloat16 *got, const float *want, unsigned long long n, float atol,
                                        float rtol, unsigned *out)
{
    unsigned bad = 0;
    float worst = 0.f;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        const float d = fabsf(__bfloat162float(got[i]) - want[i]);
        if (!(d <= atol + rtol * fabsf(want[i]))) ++bad;
        if (d != d) worst = __int_as_float(0x7f800000);   // a NaN is the worst
        else if (d > worst) worst = d;
    }
    if (bad) atomicAdd(out, bad);
    atomicMax(out + 1, __float_as_uint(worst));
}
