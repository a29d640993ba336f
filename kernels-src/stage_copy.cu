// stage_copy.cu — pattern 1: staging a tile through shared memory, one tile at a time per block
// (no overlap: the baseline the pipelines are measured against). out[i] = in[i] + 1 on u32.
//   stage_sync   global -> registers -> shared, barrier, shared -> global (ordinary loads)
//   stage_ca4    the same with cp.async.ca 4-byte copies (ignore-src zero-fill past n)
//   stage_ca16   cp.async.ca 16-byte copies (src-size zero-fill of a partial last vector)
//   stage_cg16   cp.async.cg 16-byte copies (L2 only), same zero-fill
// The cp.async kernels write the zero-filled padding up to n rounded up to 4 elements (each
// padding element becomes 0 + 1): the tail's zero-fill is visible in the output. Consumers read
// the tile with a rotation across warps, so the block barrier is what makes the result right.
#include <cuasync/cp_async.cuh>

#ifndef VPT
#define VPT 2            // 16-byte vectors per thread per tile
#endif
#define THREADS 256
#define TILE_VECS (THREADS * VPT)

typedef unsigned long long u64;
namespace cpa = cuasync::cp_async;

// The vector this thread consumes: another warp's (v + 32) % TILE_VECS.
__device__ __forceinline__ int consumer_vec(int v) { return (v + 32) % TILE_VECS; }

__device__ __forceinline__ void emit(unsigned *out, u64 e0, uint4 x, u64 limit)
{
    if (e0 + 4 <= limit) {
        *reinterpret_cast<uint4 *>(out + e0) = make_uint4(x.x + 1, x.y + 1, x.z + 1, x.w + 1);
    } else {
        const unsigned v[4] = { x.x, x.y, x.z, x.w };
        for (int j = 0; j < 4 && e0 + j < limit; ++j) out[e0 + j] = v[j] + 1;
    }
}

extern "C" __global__ void __launch_bounds__(THREADS) stage_sync(unsigned *out, const unsigned *in, u64 n)
{
    __shared__ uint4 tile[TILE_VECS];
    const u64 nvec = (n + 3) / 4, ntiles = (nvec + TILE_VECS - 1) / TILE_VECS;
    for (u64 t = blockIdx.x; t < ntiles; t += gridDim.x) {
        for (int k = 0; k < VPT; ++k) {
            const int v = threadIdx.x + k * THREADS;
            const u64 e0 = (t * TILE_VECS + v) * 4;
            uint4 x = make_uint4(0, 0, 0, 0);
            if (e0 + 4 <= n) x = *reinterpret_cast<const uint4 *>(in + e0);
            else if (e0 < n) {
                unsigned w[4] = { 0, 0, 0, 0 };
                for (int j = 0; j < 4 && e0 + j < n; ++j) w[j] = in[e0 + j];
                x = make_uint4(w[0], w[1], w[2], w[3]);
            }
            tile[v] = x;
        }
        __syncthreads();
        for (int k = 0; k < VPT; ++k) {
            const int v = consumer_vec(threadIdx.x + k * THREADS);
            emit(out, (t * TILE_VECS + v) * 4, tile[v], n);
        }
        __syncthreads();
    }
}

// One tile with cp.async: FORM 0 = ca 4-byte, 1 = ca 16-byte, 2 = cg 16-byte.
template <int FORM>
__device__ __forceinline__ void stage_cp_async(unsigned *out, const unsigned *in, u64 n)
{
    __shared__ __align__(16) uint4 tile[TILE_VECS];
    const u64 nvec = (n + 3) / 4, ntiles = (nvec + TILE_VECS - 1) / TILE_VECS, padded = nvec * 4;
    for (u64 t = blockIdx.x; t < ntiles; t += gridDim.x) {
        for (int k = 0; k < VPT; ++k) {
            const int v = threadIdx.x + k * THREADS;
            const u64 e0 = (t * TILE_VECS + v) * 4;
            if (e0 >= padded) continue;
            if (FORM == 0) {
                for (int j = 0; j < 4; ++j) {
                    const bool past = e0 + j >= n;   // read nothing, write zeros
                    cpa::copy_ca_ignore<4>(reinterpret_cast<unsigned *>(&tile[v]) + j, in + (past ? 0 : e0 + j), past);
                }
            } else {
                const unsigned src_bytes = e0 + 4 <= n ? 16u : (unsigned)(n - e0) * 4u;
                if (FORM == 1) cpa::copy_ca_zfill<16>(&tile[v], in + e0, src_bytes);
                else cpa::copy_cg_zfill(&tile[v], in + e0, src_bytes);
            }
        }
        cpa::commit_group();
        cpa::wait_group<0>();
        __syncthreads();
        for (int k = 0; k < VPT; ++k) {
            const int v = consumer_vec(threadIdx.x + k * THREADS);
            const u64 e0 = (t * TILE_VECS + v) * 4;
            if (e0 < padded) emit(out, e0, tile[v], padded);
        }
        __syncthreads();
    }
}

extern "C" __global__ void __launch_bounds__(THREADS) stage_ca4(unsigned *out, const unsigned *in, u64 n) { stage_cp_async<0>(out, in, n); }
extern "C" __global__ void __launch_bounds__(THREADS) stage_ca16(unsigned *out, const unsigned *in, u64 n) { stage_cp_async<1>(out, in, n); }
extern "C" __global__ void __launch_bounds__(THREADS) stage_cg16(unsigned *out, const unsigned *in, u64 n) { stage_cp_async<2>(out, in, n); }
