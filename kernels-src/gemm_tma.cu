// gemm_tma.cu — C = A * B^T (A: M x K, B: N x K, both bf16 row-major; C: M x N, f32), a Hopper
// mainloop on a cuasync.pipeline plan named "gemm" (<cuasync/pipelines/gemm.cuh>): two tensor-map
// loads a stage (an A tile BM x 64 and a B tile BN x 64, 128B swizzle), one producer warpgroup
// (one thread issues the loads; the warpgroup gives its registers to the consumers with
// setmaxnreg) and BM / 64 consumer warpgroups, each computing a 64 x BN slice with wgmma
// (m64nBNk16, A and B from shared memory). No byte count, stage count or shared-memory offset is
// written here: the plan's config holds them. Persistent: blocks take output tiles round-robin.
// Edge tiles: the loads' out-of-bounds fill is zero, and the epilogue stores only inside C.
#include <cuasync/pipelines/gemm.cuh>
#include <cuasync/tma.cuh>
#include <cuasync/wgmma.cuh>

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#define BK 64

typedef cuasync::pipelines::gemm Plan;
typedef cuasync::pipeline<Plan> Pipe;
namespace wg = cuasync::wgmma;

constexpr int CONSUMERS = BM / 64;   // consumer warpgroups
static_assert(BM % 64 == 0 && (BN == 64 || BN == 128 || BN == 256), "BM a multiple of 64; BN 64, 128 or 256");
static_assert(Plan::producer_warps == 4 && Plan::consumer_threads == 128 * CONSUMERS,
              "the plan: producer = { warps = 4 }, consumer = { warps = 4 * BM / 64 }");
static_assert(Plan::load_box_bytes[Plan::a] == BM * BK * 2 && Plan::load_box_bytes[Plan::b] == BN * BK * 2,
              "the plan's loads are the BM x 64 and BN x 64 bf16 tiles");
// Registers: every thread starts with what __launch_bounds__(block, 1) gives (65536 / block,
// down to a multiple of 8); the producer warpgroup drops to 40, and the consumers may take only
// what it released (setmaxnreg.inc waits for free registers in the block: asking for more hangs).
constexpr int BASE_REGS = (65536 / Plan::block) / 8 * 8 > 248 ? 248 : (65536 / Plan::block) / 8 * 8;
constexpr int RAISED = BASE_REGS + (128 * (BASE_REGS - 40)) / (128 * CONSUMERS);
constexpr int CONSUMER_REGS = (RAISED > 232 ? 232 : RAISED) / 8 * 8;

__device__ __forceinline__ void mma(float (&d)[BN / 2], unsigned long long a, unsigned long long b, bool accumulate)
{
#if BN == 64
    wg::mma_m64n64k16_bf16(d, a, b, accumulate);
#elif BN == 128
    wg::mma_m64n128k16_bf16(d, a, b, accumulate);
#else
    wg::mma_m64n256k16_bf16(d, a, b, accumulate);
#endif
}

extern "C" __global__ void __launch_bounds__(Plan::block, 1) gemm_tma(const __grid_constant__ cuasync::tensormap A,
    const __grid_constant__ cuasync::tensormap B, float *C, unsigned M, unsigned N, unsigned K)
{
    Pipe pipe;
    pipe.init();
    const unsigned tiles_n = (N + BN - 1) / BN, tiles = ((M + BM - 1) / BM) * tiles_n, kt = (K + BK - 1) / BK;
    const unsigned group = threadIdx.x / 128u;
    if (group == 0) {
        wg::setmaxnreg_dec<40>();
        if (!pipe.is_producer_thread()) return;
        auto st = pipe.producer_start();
        for (unsigned t = blockIdx.x; t < tiles; t += gridDim.x) {
            const int m0 = (int)((t / tiles_n) * BM), n0 = (int)((t % tiles_n) * BN);
            for (unsigned k = 0; k < kt; ++k, st.advance()) {
                pipe.producer_acquire(st);
                pipe.producer_expect(st);
                cuasync::tma::load(pipe.buffer(st, Plan::a), &A, pipe.full_barrier(st), (int)(k * BK), m0);
                cuasync::tma::load(pipe.buffer(st, Plan::b), &B, pipe.full_barrier(st), (int)(k * BK), n0);
            }
        }
        return;
    }
    wg::setmaxnreg_inc<CONSUMER_REGS>();
    const unsigned c = group - 1u, tid = threadIdx.x % 128u;
    auto st = pipe.consumer_start();
    float acc[BN / 2];
    for (unsigned t = blockIdx.x; t < tiles; t += gridDim.x) {
        const unsigned m0 = (t / tiles_n) * BM, n0 = (t % tiles_n) * BN;
        auto prev = st;
        for (unsigned k = 0; k < kt; ++k) {
            pipe.consumer_wait(st);
            const unsigned long long a = wg::desc_kmajor(pipe.buffer(st, Plan::a) + c * 64u * 128u, 128u);
            const unsigned long long b = wg::desc_kmajor(pipe.buffer(st, Plan::b), 128u);
            wg::fence();
#pragma unroll
            for (unsigned kk = 0; kk < BK / 16; ++kk)
                mma(acc, wg::desc_advance(a, 32u * kk), wg::desc_advance(b, 32u * kk), k > 0 || kk > 0);
            wg::commit_group();
            // one group in flight: the previous stage's MMAs are done, its buffers may be refilled
            wg::wait_group<1>();
            if (k > 0) pipe.consumer_release(prev);
            prev = st;
            st.advance();
        }
        wg::wait_group<0>();
        pipe.consumer_release(prev);
        const unsigned row0 = m0 + 64u * c;
#pragma unroll
        for (unsigned i = 0; i < BN / 2; ++i) {
            const unsigned r = row0 + wg::acc_row(i, tid), col = n0 + wg::acc_col(i, tid);
            if (r < M && col < N) C[(size_t)r * N + col] = acc[i];
        }
    }
}
