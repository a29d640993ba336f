// gemm_pingpong.cu — C = A * B^T (A: M x K, B: N x K, both bf16 row-major; C: M x N, f32) on a
// ping-pong schedule: the plan (<cuasync/pipelines/gemm_pingpong.cuh>, kernels/gemm_pingpong.lua)
// has one producer warpgroup issuing TMA loads of an A tile (BM x 64) and a B tile (BN x 64) a
// stage, and two consumer warpgroups that take alternate output tiles of the block, each a whole
// BM x BN tile (BM / 64 m64 wgmmas a k-step). The plan's ordered barrier ("math", two turns a
// round: 0 the mainloop, 1 the epilogue) keeps them in step, so that one warpgroup's MMAs run
// while the other drains its accumulators: a warpgroup waits for its mainloop turn before it
// issues its tile's first MMA and passes it after issuing the last (the other may then queue its
// own behind them), and the same around its epilogue (CUTLASS's ping-pong kernel does the same
// with its OrderedSequenceBarrier). The producer fills the stages tile after tile, in the block's
// order; the stages of tile i are read by warpgroup i % 2 alone (consume = "alternate": a
// group's pipeline state starts at its first tile, ordered<>::first, and moves past the other's
// tiles after each of its own, skip_others). No byte count, stage count or offset is written
// here: the plan's config holds them. Persistent: blocks take output tiles round-robin, in raster
// bands of RASTER tile rows.
//   EPILOGUE = 1: C goes out through TMA stores of 64 x 32 chunks staged in the plan's scratch
//     (one 8 KiB chunk buffer per consumer warpgroup); 0: each thread stores its accumulators.
//     The loads' out-of-bounds fill is zero; both epilogues store only inside C.
// The device headers first, the plan's header last (the shared block is what NVRTC precompiles).
#include <cuasync/pipeline.cuh>
#include <cuasync/tma.cuh>
#include <cuasync/bulk.cuh>
#include <cuasync/wgmma.cuh>
#include <cuasync/warpgroup.cuh>
#include <cuasync/epilogue.cuh>
#include <cuasync/pipelines/gemm_pingpong.cuh>

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef EPILOGUE
#define EPILOGUE 1
#endif
#ifndef RASTER
#define RASTER 1
#endif
#if !defined(BK) || !defined(CHUNK_COLS)
#error "gemm_pingpong.cu: BK and CHUNK_COLS are passed as defines by kernels/gemm.lua"
#endif

typedef cuasync::pipelines::gemm_pingpong Plan;
typedef cuasync::pipeline<Plan> Pipe;
namespace wg = cuasync::wgmma;

constexpr int HALVES = BM / 64;   // m64 wgmmas a k-step of one warpgroup's tile
static_assert((BM == 64 || BM == 128) && (BN == 64 || BN == 128 || BN == 256), "BM 64 or 128; BN 64, 128 or 256");
static_assert(Plan::producer_warps == 4 && Plan::consumer_threads == 256,
              "the plan: producer = { warps = 4 }, consumer = { warps = 8 } (two consumer warpgroups)");
static_assert(Plan::order_groups == 2 && Plan::order_group_warps == 4 && Plan::order_depth == 2 && Plan::order_alternate,
              "the plan's order: two groups of one warpgroup, two turns a round (mainloop, epilogue), consume = \"alternate\"");
static_assert(Plan::load_box_bytes[Plan::a] == BM * BK * 2 && Plan::load_box_bytes[Plan::b] == BN * BK * 2,
              "the plan's loads are the BM x 64 A tile and the BN x 64 B tile, bf16");
static_assert(Plan::cluster_size == 1, "ping-pong runs without clusters");
static_assert(!EPILOGUE || Plan::scratch_bytes >= Plan::order_groups * 64 * CHUNK_COLS * 4,
              "the TMA epilogue needs a chunk buffer per consumer warpgroup in the plan's scratch");
// Registers: every thread starts with what __launch_bounds__(block, 1) gives (65536 / block, down
// to a multiple of 8: 168 for 384 threads); the producer warpgroup drops to PRODUCER_REGS and the
// two consumer warpgroups take what it released (232). kernels/gemm_pingpong.lua derives the same
// numbers and refuses a tile whose accumulators (BM x BN / 128 a thread) leave too few.
constexpr int BASE_REGS = (65536 / Plan::block) / 8 * 8 > 248 ? 248 : (65536 / Plan::block) / 8 * 8;
#ifndef PRODUCER_REGS
#ifdef CUASYNC_TRACE
#define PRODUCER_REGS 56
#else
#define PRODUCER_REGS 40
#endif
#endif
constexpr int RAISED = BASE_REGS + (128 * (BASE_REGS - PRODUCER_REGS)) / 256;
constexpr int CONSUMER_REGS = (RAISED > 232 ? 232 : RAISED) / 8 * 8;
static_assert(BM * BN / 128 + 56 <= CONSUMER_REGS, "a consumer thread's accumulators leave it too few registers");

// Tile t: RASTER = g takes tiles in bands of g tile rows, down each column of the band before the
// next (a wave shares A and B panels in L2); the last band may be shorter.
struct tiling {
    unsigned tiles_m, tiles_n, count;
    __device__ tiling(unsigned M, unsigned N) : tiles_m((M + BM - 1) / BM), tiles_n((N + BN - 1) / BN), count(tiles_m * tiles_n) {}
    __device__ void at(unsigned t, unsigned &m0, unsigned &n0) const
    {
        const unsigned first = (t / (RASTER * tiles_n)) * RASTER;
        const unsigned rows = tiles_m - first < RASTER ? tiles_m - first : RASTER;
        const unsigned w = t - first * tiles_n;
        m0 = (first + w % rows) * BM;
        n0 = (w / rows) * BN;
    }
};

extern "C" __global__ void __launch_bounds__(Plan::block, 1) gemm_pingpong(const __grid_constant__ cuasync::tensormap A,
    const __grid_constant__ cuasync::tensormap B, const __grid_constant__ cuasync::tensormap Cmap, float *C,
    float *work, unsigned *flags, unsigned M, unsigned N, unsigned K, unsigned epoch)
{
    // gemm_tma.cu's arguments (kernels/gemm.lua's SIGNATURE and gemm.args), so both schedules
    // launch alike; the turnstile's work, flags and epoch are for its split schedulers, which
    // the ping-pong plan refuses: whole tiles only
    (void)work; (void)flags; (void)epoch;
    Pipe pipe;
    pipe.init();
    const tiling tl(M, N);
    const unsigned kt = (K + BK - 1) / BK;
    // the block's tiles: blockIdx.x, + gridDim.x, ...; its i-th belongs to consumer warpgroup i % 2
    if (cuasync::warpgroup::index() == 0u) {
        wg::setmaxnreg_dec<PRODUCER_REGS>();
        if (!pipe.is_producer_thread()) return;
        auto st = pipe.producer_start();
        for (unsigned t = blockIdx.x; t < tl.count; t += gridDim.x) {   // tile after tile, both groups'
            unsigned m0, n0;
            tl.at(t, m0, n0);
            for (unsigned k = 0; k < kt; ++k, st.advance()) {
                pipe.producer_acquire(st);
                pipe.producer_expect(st);
                cuasync::tma::load(pipe.buffer(st, Plan::a), &A, pipe.full_barrier(st), (int)(k * BK), (int)m0);
                cuasync::tma::load(pipe.buffer(st, Plan::b), &B, pipe.full_barrier(st), (int)(k * BK), (int)n0);
            }
        }
        return;
    }
    wg::setmaxnreg_inc<CONSUMER_REGS>();
    const cuasync::ordered<Plan> math(pipe);   // this warpgroup's group: 0 or 1
    const unsigned g = math.group, tid = threadIdx.x % 128u;
    auto turn = math.start();
    auto st = pipe.consumer_start();
    math.first(st, kt);   // past group 0's first tile, for group 1
    float acc[HALVES][BN / 2];
#if EPILOGUE
    float *chunk = reinterpret_cast<float *>(pipe.scratch()) + g * 64u * CHUNK_COLS;
#endif
    for (unsigned t = blockIdx.x + g * gridDim.x; t < tl.count; t += Plan::order_groups * gridDim.x) {
        unsigned m0, n0;
        tl.at(t, m0, n0);
        math.wait_turn(turn);   // turn 0: the other group has issued its tile's MMAs
        auto prev = st;
        for (unsigned k = 0; k < kt; ++k) {
            pipe.consumer_wait(st);
            const unsigned long long a = wg::desc_kmajor(pipe.buffer(st, Plan::a), 128u);
            const unsigned long long b = wg::desc_kmajor(pipe.buffer(st, Plan::b), 128u);
            wg::fence();
#pragma unroll
            for (unsigned kk = 0; kk < BK / 16; ++kk)
#pragma unroll
                for (unsigned h = 0; h < HALVES; ++h)   // rows 64 h.. of the A tile: 64 rows of 128 bytes further
                    wg::mma_m64k16_bf16(acc[h], wg::desc_advance(a, h * 64u * 128u + 32u * kk), wg::desc_advance(b, 32u * kk), k > 0 || kk > 0);
            wg::commit_group();
            pipe.trace_store();   // a traced build stores its timeline records while the MMAs run
            // one group in flight: the previous stage's MMAs are done, its buffers may be refilled
            wg::wait_group<1>();
            if (k > 0) pipe.consumer_release(prev);
            prev = st;
            st.advance();
        }
        math.pass_turn(turn);   // every MMA of the tile issued: the other group may queue its own
        turn.advance();
        wg::wait_group<0>();
        pipe.consumer_release(prev);
        math.skip_others(st, kt);   // past the other group's next tile, to this group's next
        math.wait_turn(turn);       // turn 1: the other group's epilogue is done
        {   // the epilogue: a range on a traced build (names: gemm.TRACE_NAMES); one atomic, answered by the close
        const cuasync::trace::range epilogue(1);
#if EPILOGUE
        // 64 x 32 chunks through this warpgroup's buffer; the TMA store clips at the edges of C
#pragma unroll
        for (unsigned h = 0; h < HALVES; ++h) {
#pragma unroll
            for (unsigned j = 0; j < BN / CHUNK_COLS; ++j) {
                if (tid == 0) cuasync::bulk::wait_group_read<0>();   // the last store has read the chunk
                cuasync::warpgroup::sync(1u + g);   // consumer warpgroup g: named barrier 1 + g
                // swizzled as kernels/gemm_maps.lua's c_map builds C's map (ablate, plain_c among it, is refused here)
                cuasync::epilogue::stage_chunk<CHUNK_COLS, true>(chunk, acc[h], j, tid);
                cuasync::bulk::fence_proxy_async_shared();   // these writes, then the async proxy reads them
                cuasync::warpgroup::sync(1u + g);
                if (tid == 0) {
                    cuasync::tma::store(&Cmap, chunk, (int)(n0 + j * CHUNK_COLS), (int)(m0 + 64u * h));
                    cuasync::bulk::commit_group();
                }
            }
        }
#else
#pragma unroll
        for (unsigned h = 0; h < HALVES; ++h)
#pragma unroll
            for (unsigned i = 0; i < BN / 2; ++i) {
                const unsigned r = m0 + 64u * h + wg::acc_row(i, tid), col = n0 + wg::acc_col(i, tid);
                if (r < M && col < N) C[(size_t)r * N + col] = acc[h][i];
            }
#endif
        }
        math.pass_turn(turn);
        turn.advance();
    }
#if EPILOGUE
    if (tid == 0) cuasync::bulk::wait_group<0>();   // every store has written C before the block exits
#endif
    (void)C;
}
