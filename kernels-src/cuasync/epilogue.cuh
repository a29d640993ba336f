// cuasync/epilogue.cuh — a TMA epilogue's chunk staging: a consumer warpgroup writes its wgmma
// accumulators (the m64nNk16 f32 fragment, wgmma::acc_row / acc_col) of one 64 x COLS chunk into
// shared memory, laid out as the tensor map that stores the chunk (tma::store) reads it. A chunk
// row of COLS elements is one swizzle span (64 or 128 bytes), and the map must be built with that
// swizzle: the 8 rows a warp's store writes, 128 bytes apart when staged plainly, all start on the
// same shared-memory banks; through the swizzle they fall on different ones. f32 chunks always; bf16
// ones (round to nearest even) where the kernel includes <cuda_bf16.h> before this header. Compiled
// by NVRTC with no host headers.
#pragma once

#include <cuasync/tma.cuh>
#include <cuasync/wgmma.cuh>

namespace cuasync {
namespace epilogue {
namespace detail {

// One element, and two neighbouring ones (at: the first, 4- or 8-byte aligned) in one store.
__device__ __forceinline__ void put(float *at, float v) { *at = v; }
__device__ __forceinline__ void put_pair(float *at, float lo, float hi)
{
    *reinterpret_cast<float2 *>(at) = make_float2(lo, hi);
}
#if defined(__CUDA_BF16_TYPES_EXIST__)
__device__ __forceinline__ void put(__nv_bfloat16 *at, float v) { *at = (__nv_bfloat16)v; }
__device__ __forceinline__ void put_pair(__nv_bfloat16 *at, float lo, float hi)
{
    *reinterpret_cast<__nv_bfloat162 *>(at) = __floats2bfloat162_rn(lo, hi);
}
#endif
template <typename T> __device__ __forceinline__ void put(T *, float)
{
    static_assert(sizeof(T) == 0, "epilogue::stage_chunk: f32 or bf16 chunks (for bf16, include <cuda_bf16.h> before <cuasync/epilogue.cuh>)");
}
template <typename T> __device__ __forceinline__ void put_pair(T *, float, float)
{
    static_assert(sizeof(T) == 0, "epilogue::stage_chunk: f32 or bf16 chunks (for bf16, include <cuda_bf16.h> before <cuasync/epilogue.cuh>)");
}

} // namespace detail

// Writes this thread's accumulators of columns j * COLS .. (j + 1) * COLS - 1 (acc: the thread's
// m64nNk16 fragment; tid: its index in the warpgroup) into `chunk`, a 64 x COLS row-major tile of
// T. SWIZZLED: placed as a map with the span COLS * sizeof(T) swizzles them (tma::swizzled), two
// neighbouring columns a store; otherwise plainly, one element a store (an unswizzled map). The
// caller syncs the warpgroup before (the store that read the chunk last is done) and after (with
// bulk::fence_proxy_async_shared first) before one thread stores the chunk.
template <unsigned COLS, bool SWIZZLED, typename T, unsigned N>
__device__ __forceinline__ void stage_chunk(T *chunk, const float (&acc)[N], unsigned j, unsigned tid)
{
    constexpr unsigned span = COLS * (unsigned)sizeof(T);
    static_assert(!SWIZZLED || span == 64u || span == 128u, "epilogue::stage_chunk: a chunk row is a swizzle span: 64 or 128 bytes");
    if (SWIZZLED) {
#pragma unroll
        for (unsigned i = j * (COLS / 2); i < (j + 1) * (COLS / 2); i += 2) {
            const unsigned off = (wgmma::acc_row(i, tid) * COLS + wgmma::acc_col(i, tid) - j * COLS) * (unsigned)sizeof(T);
            detail::put_pair(reinterpret_cast<T *>(reinterpret_cast<unsigned char *>(chunk) + tma::swizzled(off, span)), acc[i], acc[i + 1]);
        }
    } else {
#pragma unroll
        for (unsigned i = j * (COLS / 2); i < (j + 1) * (COLS / 2); ++i)
            detail::put(chunk + (wgmma::acc_row(i, tid) * COLS + wgmma::acc_col(i, tid) - j * COLS), acc[i]);
    }
}

} // namespace epilogue
} // namespace cuasync
