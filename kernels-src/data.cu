// data.cu — the device side of lua/cuasync/data.lua: buf:fill_random, buf:poison and
// cuasync.compare on device buffers. One kernel per element type (fill_<dtype>, compare_<dtype>),
// written by the macros at the end; every kernel is a grid-stride loop over n elements.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

typedef unsigned long long u64;
typedef long long i64;

// -- The generator ---------------------------------------------------------------------------
// Counter-based: element i of seed s is a function of (s, i) alone, so any grid gives the same
// data, and lua/cuasync/data.lua computes the same values on the host. It is SplitMix64's output
// function (Steele, Lea, Flood 2014) at counter i: x_i = mix(key + (i + 1) * golden), with
// key = mix(seed), golden = 0x9E3779B97F4A7C15.
__device__ __forceinline__ u64 mix64(u64 z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

__device__ __forceinline__ u64 draw(u64 key, u64 i) { return mix64(key + (i + 1ull) * 0x9E3779B97F4A7C15ull); }

// Floats: u = the top 24 bits of x as a fraction in [0, 1) (53 bits for f64), v = lo + (hi - lo) * u
// in double with no contraction (the host computes the same two roundings), then rounded to f32
// and from f32 to bf16 or f16 (round to nearest even, each step).
__device__ __forceinline__ double uniform24(u64 x, double lo, double hi)
{
    return __dadd_rn(lo, __dmul_rn(__dadd_rn(hi, -lo), (double)(x >> 40) * 0x1p-24));
}

__device__ __forceinline__ void put(float *p, u64 x, double lo, double hi) { *p = __double2float_rn(uniform24(x, lo, hi)); }
__device__ __forceinline__ void put(double *p, u64 x, double lo, double hi)
{
    *p = __dadd_rn(lo, __dmul_rn(__dadd_rn(hi, -lo), (double)(x >> 11) * 0x1p-53));
}
__device__ __forceinline__ void put(__nv_bfloat16 *p, u64 x, double lo, double hi)
{
    *p = __float2bfloat16_rn(__double2float_rn(uniform24(x, lo, hi)));
}
__device__ __forceinline__ void put(__half *p, u64 x, double lo, double hi)
{
    *p = __float2half_rn(__double2float_rn(uniform24(x, lo, hi)));
}

// Integers: lo + floor((x >> 32) * (hi - lo) / 2^32), in [lo, hi) (hi - lo <= 2^32, checked by the host).
template <typename T> __device__ __forceinline__ void put(T *p, u64 x, double lo, double hi)
{
    const u64 range = (u64)(hi - lo);
    *p = (T)((i64)lo + (i64)(((x >> 32) * range) >> 32));
}

template <typename T> __device__ __forceinline__ void fill(T *p, u64 n, u64 key, double lo, double hi)
{
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        put(p + i, draw(key, i), lo, hi);
}

// -- The poison ------------------------------------------------------------------------------
// Every 16-bit half of the buffer 0x7FFA (bytes FA 7F): a positive quiet NaN read as f16, bf16,
// f32 (0x7FFA7FFA) or f64 (0x7FFA7FFA7FFA7FFA) — one LuaJIT reads back as a number (nan), where
// 0xFF bytes read back as nil — and a payload no arithmetic writes (CUDA's NaN is 0x7FFFFFFF, 0x7FFF).
extern "C" __global__ void poison(unsigned char *p, u64 n)
{
    const u64 stride = (u64)gridDim.x * blockDim.x;
    const u64 first = blockIdx.x * (u64)blockDim.x + threadIdx.x;
    if (((u64)p & 3ull) == 0) {
        unsigned *w = (unsigned *)p;
        for (u64 i = first; i < n / 4; i += stride) w[i] = 0x7FFA7FFAu;
        for (u64 i = n / 4 * 4 + first; i < n; i += stride) p[i] = (i & 1) ? 0x7F : 0xFA;
    } else {
        for (u64 i = first; i < n; i += stride) p[i] = (i & 1) ? 0x7F : 0xFA;
    }
}

// -- The comparison --------------------------------------------------------------------------
// out[0] += the elements outside |got - want| <= atol + rtol * |want| (equal values, infinities
// included, and two NaNs agree; an infinity agrees only with itself); out[1] = the lowest such index (start at ~0); out[2] = the
// largest |got - want| over every element, as the bits of a non-negative double (a NaN on one
// side alone counts as the largest).
__device__ __forceinline__ double as_double(float v) { return (double)v; }
__device__ __forceinline__ double as_double(double v) { return v; }
__device__ __forceinline__ double as_double(__nv_bfloat16 v) { return (double)__bfloat162float(v); }
__device__ __forceinline__ double as_double(__half v) { return (double)__half2float(v); }
template <typename T> __device__ __forceinline__ double as_double(T v) { return (double)v; }

template <typename T>
__device__ __forceinline__ void compare(const T *got, const T *want, u64 n, double atol, double rtol, u64 *out)
{
    u64 bad = 0, first = ~0ull, worst = 0;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        const double g = as_double(got[i]), w = as_double(want[i]);
        if (g == w || (g != g && w != w)) continue;
        const double d = fabs(g - w);
        const u64 bits = d != d ? 0x7FF8000000000000ull : (u64)__double_as_longlong(d);
        if (bits > worst) worst = bits;
        if (isinf(d) || !(d <= __dadd_rn(atol, __dmul_rn(rtol, fabs(w))))) {   // as the host computes it
            ++bad;
            if (i < first) first = i;
        }
    }
    for (int o = 16; o > 0; o >>= 1) {   // the warp's sums, minimum and maximum, then one atomic each
        bad += __shfl_down_sync(0xFFFFFFFFu, bad, o);
        const u64 f = __shfl_down_sync(0xFFFFFFFFu, first, o), m = __shfl_down_sync(0xFFFFFFFFu, worst, o);
        if (f < first) first = f;
        if (m > worst) worst = m;
    }
    if ((threadIdx.x & 31u) == 0) {
        if (bad) { atomicAdd(out, bad); atomicMin(out + 1, first); }
        if (worst) atomicMax(out + 2, worst);
    }
}

#define DATA_KERNELS(NAME, T)                                                                                  \
    extern "C" __global__ void fill_##NAME(T *p, u64 n, u64 key, double lo, double hi) { fill(p, n, key, lo, hi); } \
    extern "C" __global__ void compare_##NAME(const T *got, const T *want, u64 n, double atol, double rtol, u64 *out) \
    {                                                                                                          \
        compare(got, want, n, atol, rtol, out);                                                                \
    }

DATA_KERNELS(u8, unsigned char)
DATA_KERNELS(i8, signed char)
DATA_KERNELS(u16, unsigned short)
DATA_KERNELS(i16, short)
DATA_KERNELS(u32, unsigned)
DATA_KERNELS(i32, int)
DATA_KERNELS(f16, __half)
DATA_KERNELS(bf16, __nv_bfloat16)
DATA_KERNELS(f32, float)
DATA_KERNELS(f64, double)
