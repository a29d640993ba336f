// attention_fwd.cu — attention forward on Hopper from a cuasync.pipeline plan named "attn"
// (<cuasync/pipelines/attn.cuh>, built by lua/cuasync/kernels/attention.lua):
//   O = softmax(Q K^T * scale) V per head, LSE = log sum exp(Q K^T * scale) per row,
// Q, K, V bf16 [b*h][s][d] row-major (3D tensor maps, 128B swizzle, boxes of 64 columns: a head
// dim of 128 is two boxes), O bf16 or f32 in the same layout, LSE f32 [b*h][s].
// A block takes one q tile (Q_TILE rows of one head): grid (q tiles, b*h); causal tiles go
// longest first. PERSISTENT: a grid of at most one block per SM instead, each walking work units
// (one q tile of one head each) as the scheduler plan "attn_sched" deals them
// (<cuasync/schedulers/attn_sched.cuh>, kernels/attention_sched.lua: a tile row is a q tile, a tile
// column a head, a head's q tiles in a row; causal: rows reversed, each head's longest first). The
// ring's state carries from unit to unit; Q is reloaded each unit, after the consumers say on a
// second barrier (q_empty, one arrival a consumer warpgroup) that their S MMAs are done with it:
// unit u waits q_full's phase u, the producer waits q_empty's phase u - 1. Roles:
//   producer warpgroup (one thread issues): Q once, into the plan's scratch, on a barrier of its
//     own; then K_j and V_j through the plan's ring, alternating: iteration 2j holds K tile j,
//     2j + 1 V tile j (the plan's one load "kv" is one kv_tile x d tile; K's and V's maps have the
//     same box), so K_j and V_j have barriers of their own: S_j starts when K_j has landed, K_j
//     is released when S_j is done, V_j when O has taken it.
//   consumer warpgroups (Q_TILE / 64, 64 query rows each): S = Q K_j^T by wgmma (A = Q, B = K_j
//     from shared memory, both K-major, as gemm_tma.cu), the online softmax in registers (exp2 of
//     scale * log2 e, running row max m and sum l, on the accumulator's row/column layout), P to
//     bf16 A fragments in registers, O += P V_j by wgmma with A from registers and B = V_j
//     MN-major (imm-trans-b), then O / l and the LSE to global memory.
// Partial tiles: K/V rows past s load as zeros (the 3D map's out-of-bounds fill, per head), and
// S columns >= s (and, causal, above the diagonal) are -inf before the softmax; rows >= s are
// not stored. No byte count, stage count or shared-memory offset is written here: the plan's
// Config and the defines from kernels/attention.lua (Q_TX, Q_BOX_SMEM from Q's map) hold them.
#include <cuasync/pipeline.cuh>
#include <cuasync/tma.cuh>
#include <cuasync/wgmma.cuh>
#include <cuasync/warpgroup.cuh>
#include <cuasync/fastmath.cuh>
#include <cuasync/pipelines/attn.cuh>

#if !defined(D) || !defined(Q_TILE) || !defined(KV_TILE) || !defined(CAUSAL) || !defined(OUT_F32) || !defined(PINGPONG) || \
    !defined(OVERLAP) || !defined(Q_TX) || !defined(Q_BOX_SMEM) || !defined(Q_BARRIER) || !defined(PRODUCER_REGS) || !defined(MAX_REGS) || \
    !defined(PERSISTENT) || (PERSISTENT && !defined(Q_EMPTY))
#error "attention_fwd.cu: D, Q_TILE, KV_TILE, CAUSAL, OUT_F32, PINGPONG, OVERLAP, Q_TX, Q_BOX_SMEM, Q_BARRIER, PRODUCER_REGS, MAX_REGS, PERSISTENT (and with it Q_EMPTY) come from kernels/attention.lua"
#endif
#if PERSISTENT
#include <cuasync/schedulers/attn_sched.cuh>
typedef cuasync::schedulers::attn_sched Sched;
static_assert(Sched::kind == cuasync::scheduler::persistent && Sched::bm == Q_TILE && Sched::bn == 1,
              "the scheduler: persistent, tiles of one q tile x one head");
#endif

typedef cuasync::pipelines::attn Plan;
typedef cuasync::pipeline<Plan> Pipe;
namespace wg = cuasync::wgmma;
namespace fm = cuasync::fastmath;

constexpr unsigned CONSUMERS = Q_TILE / 64;
constexpr unsigned SPAN = 64;          // bf16 columns in one 128-byte swizzle row: a box's width
constexpr unsigned BLOCKS = D / SPAN;  // column blocks (boxes) of a Q, K or V tile
static_assert(D == 64 || D == 128, "head dim 64 or 128");
static_assert(KV_TILE == 64 || KV_TILE == 128 || KV_TILE == 176, "kv tile 64, 128 or 176");
static_assert(Plan::producer_warps == 4 && Plan::consumer_threads == 128 * CONSUMERS,
              "the plan: producer = { warps = 4 }, consumer = { warps = 4 * Q_TILE / 64 }");
static_assert(Plan::loads == 1 && Plan::load_boxes[Plan::kv] == BLOCKS && Plan::load_box_bytes[Plan::kv] == KV_TILE * SPAN * 2,
              "the plan's one load is a KV_TILE x D bf16 tile in 64-column boxes");
static_assert(Plan::scratch_bytes >= Q_BARRIER + 8, "the scratch holds the Q tile and its barrier");
#if PERSISTENT
static_assert(Plan::scratch_bytes >= Q_EMPTY + 8, "the scratch holds Q's second barrier");
#endif

// Registers (as gemm_tma.cu): what __launch_bounds__(block, 1) gives each thread, the producer
// warpgroup drops to PRODUCER_REGS, the consumers take what it released. A lone consumer
// warpgroup already has its cap: no move.
constexpr int BASE_REGS = (65536 / Plan::block) / 8 * 8 > 248 ? 248 : (65536 / Plan::block) / 8 * 8;
constexpr int RAISED = BASE_REGS + (128 * (BASE_REGS - PRODUCER_REGS)) / (128 * CONSUMERS);
constexpr int CONSUMER_REGS = (RAISED > MAX_REGS ? MAX_REGS : RAISED) / 8 * 8;
constexpr bool MOVE_REGS = CONSUMERS > 1;

#define NEG_INF (-__int_as_float(0x7f800000))   // -inf (no math header under NVRTC)

#if PERSISTENT
// The kv tiles q tile q0.. reads (model/attention.lua's kv_tiles): all, or causal up to its last row's.
__device__ __forceinline__ unsigned kv_tiles_of(unsigned q0, unsigned s)
{
    const unsigned all_tiles = (s + KV_TILE - 1) / KV_TILE;
    const unsigned last_row = (q0 + Q_TILE < s ? q0 + Q_TILE : s) - 1u;
    return CAUSAL && last_row / KV_TILE + 1u < all_tiles ? last_row / KV_TILE + 1u : all_tiles;
}

// Unit u of this block (u = 0, 1, ...): its head and its first query row; false past the last.
// Rounds of the grid: round u takes the scheduler's tiles u G .. u G + G - 1 (a head's q tiles in a
// row, causal reversed so that the head's longest comes first; kernels/attention_sched.lua says
// why this order). Causal: every other round in reverse block order (a snake): plain round robin
// leaves the busiest block 12.5% over the mean kv tiles on 4x16x4096, the snake 3.1%
// (kernels/attention_sched.lua walks the same order on the CPU).
__device__ __forceinline__ bool unit_at(unsigned u, unsigned &bh, unsigned &q0)
{
    const unsigned g = gridDim.x, c = blockIdx.x;
    const unsigned i = u * g + (CAUSAL && (u & 1u) ? g - 1u - c : c);
    if (i >= Sched::tiles) return false;
    unsigned row, col;
    cuasync::scheduler::tile_at<Sched>(i, row, col);
    bh = col;
    q0 = (CAUSAL ? Sched::tiles_m - 1u - row : row) * Q_TILE;
    return true;
}
#endif

// The max and the sum of a row over the 4 threads of a quad that hold it.
__device__ __forceinline__ float quad_max(float x)
{
    x = fmaxf(x, __shfl_xor_sync(0xFFFFFFFFu, x, 1));
    return fmaxf(x, __shfl_xor_sync(0xFFFFFFFFu, x, 2));
}
__device__ __forceinline__ float quad_sum(float x)
{
    x += __shfl_xor_sync(0xFFFFFFFFu, x, 1);
    return x + __shfl_xor_sync(0xFFFFFFFFu, x, 2);
}

// The four lanes of a quad hold, for one row, the bf16 pairs 2 * lane, 2 * lane + 1 of four
// 8-column groups (w[g]: group g). Transposed, lane q holds group q's eight columns in order
// (w[k]: columns 2k, 2k + 1), one 16-byte store instead of four 4-byte ones: a 4-byte store of a
// warp touches 8 rows of 16 bytes, and the epilogue was bound by their count (about 2.5 us a
// unit). Two butterfly rounds swap bit 1, then bit 0, of lane and slot.
__device__ __forceinline__ void quad_transpose(unsigned (&w)[4], unsigned lane)
{
#pragma unroll
    for (unsigned m = 2u; m >= 1u; m /= 2u) {
        const bool hi = (lane & m) != 0u;
#pragma unroll
        for (unsigned k = 0; k < 4u; ++k) {
            if (k & m) continue;   // the pair (k, k + m)
            const unsigned got = __shfl_xor_sync(0xFFFFFFFFu, hi ? w[k] : w[k + m], m);
            if (hi) w[k] = got; else w[k + m] = got;
        }
    }
}

// Issue S = Q K^T for consumer warpgroup c (its 64 rows of Q) on the K tile in `k_tile`: D / 16
// k16 steps, step kk in column block kk / 4, 32 bytes a step inside it. One commit group.
__device__ __forceinline__ void issue_s(float (&sc)[KV_TILE / 2], const unsigned char *q_smem, unsigned c, const unsigned char *k_tile)
{
    wg::fence();
#pragma unroll
    for (unsigned kk = 0; kk < D / 16; ++kk) {
        const unsigned long long a = wg::desc_kmajor(q_smem + (kk / 4u) * Q_BOX_SMEM + c * 64u * 128u, 128u);
        const unsigned long long b = wg::desc_kmajor(k_tile + (kk / 4u) * Plan::load_box_smem[Plan::kv], 128u);
        wg::mma_m64k16_bf16(sc, wg::desc_advance(a, 32u * (kk % 4u)), wg::desc_advance(b, 32u * (kk % 4u)), kk > 0);
    }
    wg::commit_group();
}

// Issue O += P V on the V tile in `v_tile` (MN-major: imm-trans-b): KV_TILE / 16 k16 steps of 16
// rows (2048 bytes) each; the column blocks are one box apart (the descriptor's leading offset).
__device__ __forceinline__ void issue_o(float (&o)[D / 2], const unsigned (&p)[KV_TILE / 16][4], const unsigned char *v_tile)
{
    wg::fence_operands(o);
    wg::fence();
#pragma unroll
    for (unsigned kb = 0; kb < KV_TILE / 16; ++kb)
        wg::mma_rs_m64k16_bf16_tb(o, p[kb], wg::desc_advance(wg::desc_mnmajor(v_tile, Plan::load_box_smem[Plan::kv]), 16u * 128u * kb), true);
    wg::commit_group();
}

// The online softmax of one S tile (keys kv0..), in place: columns past s and (causal) above the
// diagonal to -inf, the running max m and sum l of the thread's two rows (register i is row half
// (i / 2) % 2), sc to exp2(sc scale log2 e - m scale log2 e); returns in corr what O must be
// multiplied by (exp2 of the old max less the new).
__device__ __forceinline__ void softmax(float (&sc)[KV_TILE / 2], float (&m)[2], float (&l)[2], float (&corr)[2],
                                        unsigned kv0, unsigned row0, unsigned tid, unsigned s, float scale_log2)
{
    if (kv0 + KV_TILE > s || (CAUSAL && kv0 + KV_TILE - 1u > row0)) {   // only the tiles that have such columns
#pragma unroll
        for (unsigned i = 0; i < KV_TILE / 2; ++i) {
            const unsigned col = kv0 + wg::acc_col(i, tid), row = row0 + wg::acc_row(i, tid);
            if (col >= s || (CAUSAL && col > row)) sc[i] = NEG_INF;
        }
    }
    // The row max in four chains a row (register i in chain (i / 4) % 4), joined at the end: every
    // exponential waits on it, and one chain would be KV_TILE / 2 dependent FMNMX long. fmaxf
    // is exact in any order, so the max is the same; the count of FMNMX is too.
    float part[2][4], mx[2], base[2], sum[2] = { 0.f, 0.f };
#pragma unroll
    for (unsigned i = 0; i < 16u; i += 2) part[(i / 2u) % 2u][i / 4u] = fmaxf(sc[i], sc[i + 1]);
#pragma unroll
    for (unsigned i = 16; i < KV_TILE / 2; ++i) part[(i / 2u) % 2u][(i / 4u) % 4u] = fmaxf(part[(i / 2u) % 2u][(i / 4u) % 4u], sc[i]);
#pragma unroll
    for (unsigned r = 0; r < 2; ++r) {
        mx[r] = fmaxf(fmaxf(fmaxf(part[r][0], part[r][1]), fmaxf(part[r][2], part[r][3])), m[r]);
        mx[r] = quad_max(mx[r]);
        base[r] = mx[r] == NEG_INF ? 0.f : mx[r] * scale_log2;   // a row with no column yet: exp2(-inf) = 0, never NaN
        corr[r] = fm::exp2_ftz(m[r] * scale_log2 - base[r]);
        m[r] = mx[r];
    }
#pragma unroll
    for (unsigned i = 0; i < KV_TILE / 2; ++i) {
        sc[i] = fm::exp2_ftz(sc[i] * scale_log2 - base[(i / 2u) % 2u]);   // one FFMA, one MUFU
        sum[(i / 2u) % 2u] += sc[i];
    }
#pragma unroll
    for (unsigned r = 0; r < 2; ++r) l[r] = l[r] * corr[r] + sum[r];
}

// P (the exponentials in sc) to bf16 A fragments: k16 block kb is accumulator registers 8 kb ..
// 8 kb + 7, in the order of the A fragment's four .b32 registers.
__device__ __forceinline__ void pack(const float (&sc)[KV_TILE / 2], unsigned (&p)[KV_TILE / 16][4])
{
#pragma unroll
    for (unsigned i = 0; i < KV_TILE / 2; i += 2) p[i / 8u][(i % 8u) / 2u] = wg::pack_bf16x2(sc[i], sc[i + 1]);
}

__device__ __forceinline__ void rescale(float (&o)[D / 2], const float (&corr)[2])
{
#pragma unroll
    for (unsigned i = 0; i < D / 2; ++i) o[i] *= corr[(i / 2u) % 2u];
}

// The ping-pong schedule's turns (the plan's ordered barrier "math"): a consumer warpgroup
// issues its MMAs only in its turn, so that one warpgroup's softmax runs while the other's MMAs
// do. Without PINGPONG: nothing.
#if PINGPONG
typedef cuasync::ordered<Plan> Turns;
#define TURN_WAIT() turns.wait_turn(turn)
#define TURN_PASS() (turns.pass_turn(turn), turn.advance())
#else
#define TURN_WAIT() ((void)0)
#define TURN_PASS() ((void)0)
#endif

extern "C" __global__ void __launch_bounds__(Plan::block, 1) attention_fwd(const __grid_constant__ cuasync::tensormap K,
    const __grid_constant__ cuasync::tensormap V, const __grid_constant__ cuasync::tensormap Q, void *O, float *LSE,
    unsigned s, float scale_log2)
{
    Pipe pipe;
    unsigned char *q_smem = pipe.scratch();   // Q: BLOCKS boxes of Q_TILE rows x 128 bytes
    cuasync::mbarrier_t *q_full = reinterpret_cast<cuasync::mbarrier_t *>(pipe.scratch() + Q_BARRIER);
    if (threadIdx.x == 0) cuasync::mbarrier::init(q_full, 1u);   // made visible by init()'s fence and sync
#if PERSISTENT
    cuasync::mbarrier_t *q_empty = reinterpret_cast<cuasync::mbarrier_t *>(pipe.scratch() + Q_EMPTY);
    if (threadIdx.x == 0) cuasync::mbarrier::init(q_empty, CONSUMERS);   // one arrival a consumer warpgroup
#endif
    pipe.init();

#if !PERSISTENT
    const unsigned bh = blockIdx.y;
    const unsigned qt = CAUSAL ? gridDim.x - 1u - blockIdx.x : blockIdx.x;   // causal: the longest tiles first
    const unsigned q0 = qt * Q_TILE;
    const unsigned all_tiles = (s + KV_TILE - 1) / KV_TILE;
    const unsigned last_row = (q0 + Q_TILE < s ? q0 + Q_TILE : s) - 1u;
    const unsigned tiles = CAUSAL && last_row / KV_TILE + 1u < all_tiles ? last_row / KV_TILE + 1u : all_tiles;
#endif
    const unsigned group = threadIdx.x / 128u;

    if (group == 0) {
        if (MOVE_REGS) wg::setmaxnreg_dec<PRODUCER_REGS>();
        if (!pipe.is_producer_thread()) return;
        // Stage st: K tile j (kv 0) or V tile j (kv 1) of head bh, once its slot is free.
        auto load_kv = [&](const decltype(pipe.producer_start()) &st, unsigned kv, unsigned j, unsigned bh_) {
            pipe.producer_acquire(st);
            pipe.producer_expect(st);
            for (unsigned b = 0; b < BLOCKS; ++b)
                cuasync::tma::load(pipe.slice(st, Plan::kv, b), kv ? &V : &K, pipe.full_barrier(st), (int)(b * SPAN),
                                   (int)(j * KV_TILE), (int)bh_);
        };
#if PERSISTENT
        // Each unit: K_0 first, then Q (once the consumers are done with the last unit's), so that
        // K_0's copy is in flight while they finish; then the rest of K and V. One ring state.
        auto st = pipe.producer_start();
        unsigned bh, q0;
        for (unsigned unit = 0; unit_at(unit, bh, q0); ++unit) {
            const unsigned tiles = kv_tiles_of(q0, s);
            for (unsigned j = 0; j < tiles; ++j) {
                for (unsigned kv = 0; kv < 2u; ++kv, st.advance()) {   // K tile j, then V tile j
                    load_kv(st, kv, j, bh);
                    if (j == 0u && kv == 0u) {
                        if (unit > 0u) cuasync::mbarrier::wait_parity(q_empty, (unit - 1u) & 1u);
                        cuasync::mbarrier::arrive_expect_tx(q_full, Q_TX);
                        for (unsigned b = 0; b < BLOCKS; ++b)
                            cuasync::tma::load(q_smem + b * Q_BOX_SMEM, &Q, q_full, (int)(b * SPAN), (int)q0, (int)bh);
                    }
                }
            }
        }
        return;
#else
        cuasync::mbarrier::arrive_expect_tx(q_full, Q_TX);
        for (unsigned b = 0; b < BLOCKS; ++b)
            cuasync::tma::load(q_smem + b * Q_BOX_SMEM, &Q, q_full, (int)(b * SPAN), (int)q0, (int)bh);
        auto st = pipe.producer_start();
        for (unsigned j = 0; j < tiles; ++j) {
            for (unsigned kv = 0; kv < 2u; ++kv, st.advance()) load_kv(st, kv, j, bh);   // K tile j, then V tile j
        }
        return;
#endif
    }
    if (MOVE_REGS) wg::setmaxnreg_inc<CONSUMER_REGS>();
    const unsigned c = group - 1u, tid = threadIdx.x % 128u;
#if PERSISTENT
    // The producer's walk, unit for unit; the ring's state and the turns carry across units.
#if PINGPONG
    Turns turns(pipe);
    auto turn = turns.start();
#endif
    auto st = pipe.consumer_start();
    unsigned bh, q0;
    for (unsigned unit = 0; unit_at(unit, bh, q0); ++unit) {
    const unsigned tiles = kv_tiles_of(q0, s);
    {   // trace ranges (a traced build only; kernels/attention.lua's TRACE_NAMES): 1, Q's wait; 2, the
        // epilogue. Ranges around the first and the last tile spilled traced ping-pong kv 176 (ptxas)
    const cuasync::trace::range q_wait(1);
    cuasync::mbarrier::wait_parity(q_full, unit & 1u);   // this unit's Q
    }
#define Q_DONE() (tid == 0u ? (void)cuasync::mbarrier::arrive(q_empty) : (void)0)   // S's MMAs are done with Q
#else
#define Q_DONE() ((void)0)
    {
#endif
    const unsigned row0 = q0 + 64u * c;   // this warpgroup's first row
    float o[D / 2];
#pragma unroll
    for (unsigned i = 0; i < D / 2; ++i) o[i] = 0.f;
    float m[2] = { NEG_INF, NEG_INF };   // rows r and r + 8 of the thread: running max
    float l[2] = { 0.f, 0.f };           // and this thread's part of the running sum
    float sc[KV_TILE / 2], corr[2];
    unsigned p[KV_TILE / 16][4];
#if !PERSISTENT
#if PINGPONG
    Turns turns(pipe);
    auto turn = turns.start();
#endif
    auto st = pipe.consumer_start();
    {
    const cuasync::trace::range q_wait(1);
    cuasync::mbarrier::wait_parity(q_full, 0u);   // Q, once (a bounded wait through the watchdog)
    }
#endif

#if !OVERLAP
    // One tile after the other: S_j, its softmax, O += P_j V_j.
    for (unsigned j = 0; j < tiles; ++j) {
        pipe.consumer_wait(st);
        TURN_WAIT();
        issue_s(sc, q_smem, c, pipe.buffer(st, Plan::kv));
        TURN_PASS();
        wg::wait_group<0>();
        wg::fence_operands(sc);
        pipe.consumer_release(st);   // K_j is done with
        st.advance();
        softmax(sc, m, l, corr, j * KV_TILE, row0, tid, s, scale_log2);
        rescale(o, corr);
        pack(sc, p);
        pipe.consumer_wait(st);
        TURN_WAIT();
        issue_o(o, p, pipe.buffer(st, Plan::kv));
        TURN_PASS();
        wg::wait_group<0>();
        wg::fence_operands(o);
        wg::fence_operands(p);
        pipe.consumer_release(st);   // V_j is done with
        st.advance();
    }
    Q_DONE();
#else
    // Software-pipelined (FlashAttention-3's intra-warpgroup overlap): S_j = Q K_j^T and
    // O += P_j-1 V_j-1 are issued together; the softmax of S_j runs while O's MMAs do. Their
    // wait (wait_group 0; then V_j-1's release, O rescaled by the softmax's corr, P_j packed) is
    // at the top of the next iteration, not after the softmax: ptxas hoists a WARPGROUP.DEPBAR
    // to the top of its basic block, and the softmax's block would then wait for O's MMAs
    // before its first exponential (the SASS of a wait placed after the softmax: docs/attention.md).
    // A loop iteration starts a block, so the softmax stays under O's MMAs; the order of the
    // waits and releases is the same.
    pipe.consumer_wait(st);
    TURN_WAIT();
    issue_s(sc, q_smem, c, pipe.buffer(st, Plan::kv));
    TURN_PASS();
    wg::wait_group<0>();
    wg::fence_operands(sc);
    pipe.consumer_release(st);   // K_0
    st.advance();                // at V_0
    softmax(sc, m, l, corr, 0u, row0, tid, s, scale_log2);   // O is 0: nothing to rescale
    auto st_o = st;              // the V tile of the O MMAs in flight (none before j = 2)
    for (unsigned j = 1; j < tiles; ++j) {
        // O += P_j-2 V_j-2, issued with S_j-1, is done. The wait is unconditional (at j = 1
        // nothing is in flight): behind a branch, ptxas could not tell that nothing is in
        // flight on the watchdog's exit paths below, and would serialize every wgmma.
        wg::wait_group<0>();
        wg::fence_operands(o);
        wg::fence_operands(p);
        if (j > 1) {
            pipe.consumer_release(st_o);   // V_j-2
            rescale(o, corr);
        }
        pack(sc, p);             // P_j-1
        auto st_k = st;
        st_k.advance();          // K_j, after V_j-1 in the ring
        pipe.consumer_wait(st_k);
        pipe.consumer_wait(st);
        TURN_WAIT();
        issue_s(sc, q_smem, c, pipe.buffer(st_k, Plan::kv));
        issue_o(o, p, pipe.buffer(st, Plan::kv));
        TURN_PASS();
        wg::wait_group<1>();     // S_j (committed first) is done; O's MMAs may still run
        wg::fence_operands(sc);
        pipe.consumer_release(st_k);   // K_j
        softmax(sc, m, l, corr, j * KV_TILE, row0, tid, s, scale_log2);
        st_o = st;
        st = st_k;
        st.advance();            // at V_j
    }
    wg::wait_group<0>();         // O += P_T-2 V_T-2 (one tile: nothing in flight)
    wg::fence_operands(o);
    wg::fence_operands(p);
    Q_DONE();                    // every S of the unit is done
    if (tiles > 1) {
        pipe.consumer_release(st_o);   // V_T-2
        rescale(o, corr);
    }
    pack(sc, p);                 // P_T-1
    pipe.consumer_wait(st);
    TURN_WAIT();
    issue_o(o, p, pipe.buffer(st, Plan::kv));
    TURN_PASS();
    wg::wait_group<0>();
    wg::fence_operands(o);
    wg::fence_operands(p);
    pipe.consumer_release(st);   // the last V
#if PERSISTENT
    st.advance();                // the next unit's K_0 (the non-overlapped loop advances after each release)
#endif
#endif

    {   // 2: the epilogue
    const cuasync::trace::range epilogue(2);
    // O / l and the LSE (natural log: (m scale log2 e + log2 l) ln 2); rows past s are not stored
    float inv[2], lse[2];
#pragma unroll
    for (unsigned r = 0; r < 2; ++r) {
        l[r] = quad_sum(l[r]);
        inv[r] = 1.f / l[r];
        lse[r] = (m[r] * scale_log2 + __log2f(l[r])) * 0.69314718055994531f;
    }
    const size_t head = (size_t)bh * s;
#if OUT_F32
#pragma unroll
    for (unsigned i = 0; i < D / 2; i += 2) {
        const unsigned row = row0 + wg::acc_row(i, tid), col = wg::acc_col(i, tid);
        if (row >= s) continue;
        const float v0 = o[i] * inv[(i / 2u) % 2u], v1 = o[i + 1] * inv[(i / 2u) % 2u];
        reinterpret_cast<float2 *>(O)[((head + row) * D + col) / 2u] = make_float2(v0, v1);
    }
#else
    // accumulator i = 4 g + 2 h + e: column group g, row half h, pair element e (wg::acc_row/col);
    // four groups at a time through quad_transpose, then one 16-byte store a row and lane
#pragma unroll
    for (unsigned h = 0; h < 2u; ++h) {
        const unsigned row = row0 + wg::acc_row(2u * h, tid);
#pragma unroll
        for (unsigned g0 = 0; g0 < D / 8u; g0 += 4u) {
            unsigned w[4];
#pragma unroll
            for (unsigned k = 0; k < 4u; ++k)
                w[k] = wg::pack_bf16x2(o[4u * (g0 + k) + 2u * h] * inv[h], o[4u * (g0 + k) + 2u * h + 1u] * inv[h]);
            quad_transpose(w, tid % 4u);   // every lane of the quad takes part, stored or not
            if (row < s)
                reinterpret_cast<uint4 *>(O)[((head + row) * D + 8u * (g0 + tid % 4u)) / 8u] = make_uint4(w[0], w[1], w[2], w[3]);
        }
    }
#endif
    if (tid % 4u == 0u) {
#pragma unroll
        for (unsigned r = 0; r < 2; ++r) {
            const unsigned row = row0 + wg::acc_row(2u * r, tid);
            if (row < s) LSE[head + row] = lse[r];
        }
    }
    }   // the epilogue's range
    }   // the unit (PERSISTENT: the walk's loop)
}
