// attention_ref.cu — the reference of the attention checks (kernels/attention.lua): a plain, f32
// attention forward for shapes too large for the CPU reference, and the device-side comparison
// of a kernel's O (bf16 or f32) and LSE with it. Q, K, V bf16 [b*h][s][d] row-major; O f32 in the
// same layout, LSE f32 [b*h][s] (natural log). spec/kernels/attention_spec.lua checks it against
// the CPU reference.
#include <cuda_bf16.h>

#define REF_ROWS 32   // query rows of a block; 4 threads a row, each d / 4 of its columns
#define REF_KEYS 32   // keys staged in shared memory at a time (as f32)

// Launch: grid (ceil(s / REF_ROWS), b*h), block 128. Exact softmax in f32: scores of REF_KEYS keys,
// their max, then the running max, sum and output rescaled once per chunk.
// The staged keys and values (one array for both head dims: a template's own would count twice).
#define REF_PITCH (128 + 1)
template <int D>
__device__ void attention_ref_body(const __nv_bfloat16 *Q, const __nv_bfloat16 *K, const __nv_bfloat16 *V, float *O,
                                   float *LSE, unsigned s, float scale, int causal, float (*k)[REF_PITCH], float (*v)[REF_PITCH])
{
    constexpr int C = D / 4;   // columns a thread owns: c = part + 4 i
    const unsigned part = threadIdx.x % 4u, r = threadIdx.x / 4u;
    const unsigned row = blockIdx.x * REF_ROWS + r;
    const size_t head = (size_t)blockIdx.y * s;
    float q[C], o[C];
    for (int i = 0; i < C; ++i) {
        q[i] = row < s ? __bfloat162float(Q[(head + row) * D + part + 4 * i]) : 0.f;
        o[i] = 0.f;
    }
    float m = -__int_as_float(0x7f800000), l = 0.f;
    const unsigned block_last = min(s, blockIdx.x * REF_ROWS + REF_ROWS) - 1u;
    const unsigned keys = causal ? block_last + 1u : s;
    for (unsigned k0 = 0; k0 < keys; k0 += REF_KEYS) {
        __syncthreads();
        for (unsigned e = threadIdx.x; e < REF_KEYS * D; e += blockDim.x) {
            const unsigned j = e / D, c = e % D;
            const bool in = k0 + j < s;
            k[j][c] = in ? __bfloat162float(K[(head + k0 + j) * D + c]) : 0.f;
            v[j][c] = in ? __bfloat162float(V[(head + k0 + j) * D + c]) : 0.f;
        }
        __syncthreads();
        float x[REF_KEYS];
        float mx = m;
#pragma unroll
        for (int j = 0; j < REF_KEYS; ++j) {
            float dot = 0.f;
            for (int i = 0; i < C; ++i) dot += q[i] * k[j][part + 4 * i];
            dot += __shfl_xor_sync(0xFFFFFFFFu, dot, 1);
            dot += __shfl_xor_sync(0xFFFFFFFFu, dot, 2);
            const unsigned col = k0 + j;
            x[j] = (col < s && (!causal || col <= row)) ? dot * scale : -__int_as_float(0x7f800000);
            mx = fmaxf(mx, x[j]);
        }
        if (mx == -__int_as_float(0x7f800000)) continue;   // nothing of this chunk for this row (yet)
        const float corr = expf(m - mx);
        l *= corr;
        for (int i = 0; i < C; ++i) o[i] *= corr;
#pragma unroll
        for (int j = 0; j < REF_KEYS; ++j) {
            const float p = expf(x[j] - mx);
            l += p;
            for (int i = 0; i < C; ++i) o[i] += p * v[j][part + 4 * i];
        }
        m = mx;
    }
    if (row >= s) return;
    for (int i = 0; i < C; ++i) O[(head + row) * D + part + 4 * i] = o[i] / l;
    if (part == 0) LSE[head + row] = m + logf(l);
}

extern "C" __global__ void __launch_bounds__(128) attention_ref(const __nv_bfloat16 *Q, const __nv_bfloat16 *K,
    const __nv_bfloat16 *V, float *O, float *LSE, unsigned s, unsigned d, float scale, int causal)
{
    __shared__ float k[REF_KEYS][REF_PITCH], v[REF_KEYS][REF_PITCH];
    if (d == 64) attention_ref_body<64>(Q, K, V, O, LSE, s, scale, causal, k, v);
    else attention_ref_body<128>(Q, K, V, O, LSE, s, scale, causal, k, v);
}

// out[0] += the elements with |got - want| > atol + rtol |want| (got bf16 when got_bf16, else f32);
// out[1] = the largest |got - want| (as bits; a NaN is the worst).
extern "C" __global__ void attention_compare(const void *got, int got_bf16, const float *want, unsigned long long n,
                                             float atol, float rtol, unsigned *out)
{
    unsigned bad = 0;
    float worst = 0.f;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        const float g = got_bf16 ? __bfloat162float(((const __nv_bfloat16 *)got)[i]) : ((const float *)got)[i];
        const float d = fabsf(g - want[i]);
        if (!(d <= atol + rtol * fabsf(want[i]))) ++bad;
        if (d != d) worst = __int_as_float(0x7f800000);
        else if (d > worst) worst = d;
    }
    if (bad) atomicAdd(out, bad);
    atomicMax(out + 1, __float_as_uint(worst));
}
