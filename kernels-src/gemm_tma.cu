// gemm_tma.cu — C = A * B^T (A: M x K, B: N x K, both bf16 row-major; C: M x N, f32 or bf16), a
// Hopper mainloop on a cuasync.pipeline plan named "gemm" (<cuasync/pipelines/gemm.cuh>): two
// tensor-map loads a stage (an A tile BM x 64 and a B tile BN x 64, 128B swizzle), one producer
// warpgroup (one thread issues the loads; the warpgroup gives its registers to the consumers with
// setmaxnreg) and BM / 64 consumer warpgroups, each computing a 64 x BN slice with wgmma
// (m64nBNk16, A and B from shared memory). No byte count, stage count or shared-memory offset is
// written here: the plan's config holds them. Persistent: the blocks walk the units (a tile and
// its k-tiles) of a cuasync.scheduler named "gemm_sched" (<cuasync/schedulers/gemm_sched.cuh>,
// scheduler.cuh's walk<Config>): persistent (whole tiles, raster bands), stream-K or split-K.
// Where a tile's k loop is cut, its partial sums meet in k order through the turnstile
// (turnstile.cuh, group forms over the consumer warpgroups: the producer never reaches the fix-up):
// an f32 partial of BM x BN per split tile in `work`, a flag per split tile in `flags`, the launch's
// `epoch` (sched:next_epoch()).
//   CLUSTER = 2: the two blocks of a cluster compute neighbouring tiles along N that share their A
//     tile; each loads half of it (the map's box: BM / 2 rows) and multicasts it to both. The
//     scheduler's tile is then the pair (BM x 2 BN): rank r takes the r-th half.
//   EPILOGUE = 1: C goes out through TMA stores of 64 x 32 chunks staged in the plan's scratch
//     region (STORE_BUFFERS chunk buffers per consumer warpgroup, used in turn: with 2, a chunk is
//     written while the store of the one before still reads its buffer); 0: each thread stores its
//     accumulators.
//     The loads' out-of-bounds fill is zero; both epilogues store only inside C.
//   OUT_BF16 = 1: C is bf16 (each accumulator rounded to nearest even); 0: f32.
//   PDL = 1: every thread waits for the grid before it on the stream (griddepcontrol.wait) before
//     its first global access, and each block lets the next grid launch once its last mainloop is
//     done (launch with programmatic = true); 0: neither.
// The device headers first, the plan's and the scheduler's headers last: the shared block is what
// a sweep's compile workers precompile once (NVRTC's automatic PCH), the plans differ per variant.
#include <cuasync/pipeline.cuh>
#include <cuasync/tma.cuh>
#include <cuasync/bulk.cuh>
#include <cuasync/wgmma.cuh>
#include <cuasync/warpgroup.cuh>
#include <cuasync/pdl.cuh>
#include <cuasync/scheduler.cuh>
#include <cuasync/turnstile.cuh>
#if OUT_BF16
#include <cuda_bf16.h>
#endif
#include <cuasync/epilogue.cuh>   // after <cuda_bf16.h>: its bf16 chunks
#include <cuasync/pipelines/gemm.cuh>
#include <cuasync/schedulers/gemm_sched.cuh>

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef CLUSTER
#define CLUSTER 1
#endif
#ifndef EPILOGUE
#define EPILOGUE 1
#endif
#ifndef OUT_BF16
#define OUT_BF16 0
#endif
#ifndef STORE_BUFFERS
#define STORE_BUFFERS 1
#endif
#ifndef PDL
#define PDL 0
#endif
#ifndef MULTICAST
#define MULTICAST (CLUSTER > 1)   // 0 with CLUSTER = 2: each block loads its whole A tile itself
#endif
// A_LEADER (ablation): rank 0 issues every slice of A, multicast; the other ranks issue none.
// TRACE (ablation): thread 128 of each block writes gemm_trace[block] = { %smid | rank << 16,
// start and end %globaltimer, tiles } for examples/gemm_ablation.lua.
#if defined(TRACE)
extern "C" __device__ unsigned long long gemm_trace[1024 * 4];
#endif
// BK (the k-block of a stage: 64 bf16 = one 128-byte swizzle span) and CHUNK_COLS (the epilogue's
// chunk width) come from kernels/gemm.lua, as kernels/gemm_maps.lua builds the tensor maps with them.
#if !defined(BK) || !defined(CHUNK_COLS)
#error "gemm_tma.cu: BK and CHUNK_COLS are passed as defines by kernels/gemm.lua"
#endif
// PLAIN_C (ablation, gemm.ABLATE.plain_c): the epilogue's chunks staged unswizzled, as before;
// otherwise swizzled (epilogue.cuh's stage_chunk), as kernels/gemm_maps.lua's c_map builds C's map.
#ifndef PLAIN_C
#define PLAIN_C 0
#endif

typedef cuasync::pipelines::gemm Plan;
typedef cuasync::pipeline<Plan> Pipe;
typedef cuasync::schedulers::gemm_sched Sched;
namespace wg = cuasync::wgmma;
namespace sch = cuasync::scheduler;
namespace ts = cuasync::turnstile;
#if OUT_BF16
typedef __nv_bfloat16 out_t;
#else
typedef float out_t;
#endif

// The consumers' release of a stage. SERIAL_RELEASE and RELEASE_CLUSTER (ablation) build the
// forms the library had before, to measure them against its own (examples/gemm_ablation.lua):
// RELEASE_CLUSTER: the arrive on a peer releases at cluster scope, not CTA scope; SERIAL_RELEASE
// (release = "warp"): lane 0 of each consumer warp arrives on every peer in turn.
#if defined(SERIAL_RELEASE) || defined(RELEASE_CLUSTER)
struct remote_arrive {
    __device__ void operator()(cuasync::mbarrier_t *bar, unsigned r) const
    {
#if defined(RELEASE_CLUSTER)
        cuasync::mbarrier::arrive_cluster(bar, r);
#else
        cuasync::mbarrier::arrive_cluster_cta(bar, r);
#endif
    }
};
__device__ __forceinline__ void release(const Pipe &pipe, const Pipe::state &st)
{
#if defined(SERIAL_RELEASE)
    if (Plan::release == 1 && Plan::peer_count > 1) {
        __syncwarp();
        if ((threadIdx.x & 31u) != 0) return;
        for (unsigned j = 0; j < Plan::peer_count; ++j) pipe.release_on(st, cuasync::cluster::peer_rank<Plan>(j), remote_arrive());
        return;
    }
#endif
    pipe.consumer_release(st, remote_arrive());
}
#else
__device__ __forceinline__ void release(const Pipe &pipe, const Pipe::state &st) { pipe.consumer_release(st); }
#endif

constexpr int CONSUMERS = BM / 64;   // consumer warpgroups
// BN 192 (wgmma's m64n192k16): 6 epilogue chunks and 24 float4 of a thread's partial, nothing here
// needs BN a power of two; only its tile count differs (fuller last waves on 132 SMs).
static_assert(BM % 64 == 0 && (BN == 64 || BN == 128 || BN == 192 || BN == 256), "BM a multiple of 64; BN 64, 128, 192 or 256");
static_assert(BN % CHUNK_COLS == 0 && BN % 8 == 0, "the epilogue's chunks and the partial's float4s divide BN");
static_assert(Plan::producer_warps == 4 && Plan::consumer_threads == 128 * CONSUMERS,
              "the plan: producer = { warps = 4 }, consumer = { warps = 4 * BM / 64 }");
constexpr unsigned SLICES = MULTICAST ? CLUSTER : 1;
static_assert(Plan::load_box_bytes[Plan::a] * SLICES == BM * BK * 2 && Plan::load_box_bytes[Plan::b] == BN * BK * 2,
              "the plan's loads are the BM x 64 A tile (in CLUSTER slices when multicast) and the BN x 64 B tile, bf16");
static_assert(Plan::cluster_size == CLUSTER && Plan::load_slices[Plan::a] == SLICES,
              "the plan's cluster is CLUSTER along x, A multicast when MULTICAST");
static_assert(STORE_BUFFERS == 1 || STORE_BUFFERS == 2, "STORE_BUFFERS is 1 or 2");
static_assert(!EPILOGUE || Plan::scratch_bytes >= STORE_BUFFERS * CONSUMERS * 64 * CHUNK_COLS * sizeof(out_t),
              "the TMA epilogue needs its scratch");
static_assert(Sched::bm == BM && Sched::bn == BN * CLUSTER && Sched::bk == BK,
              "the scheduler's tile is the block's (a cluster's pair of tiles along N with CLUSTER = 2)");
static_assert(CLUSTER == 1 || Sched::kind == sch::persistent, "a cluster pairs whole tiles: the persistent walk only");
static_assert(!(Sched::kind == sch::split_k && Sched::mode == sch::reduce), "split-K's partials meet through the turnstile (mode serial)");
// The turnstile's kinds: the consumer warpgroups do the fix-up over this named barrier (1..CONSUMERS
// are the epilogue's warpgroup barriers); thread 128, the first consumer, spins and stores.
constexpr bool TURNSTILE = Sched::slots > 0;
constexpr unsigned FIXUP_BARRIER = 8u;
static_assert(CONSUMERS < FIXUP_BARRIER, "the fix-up's named barrier is none of the warpgroups'");
// Registers: every thread starts with what __launch_bounds__(block, 1) gives (65536 / block,
// down to a multiple of 8); the producer warpgroup drops to PRODUCER_REGS, and the consumers may take only
// what it released (setmaxnreg.inc waits for free registers in the block: asking for more hangs).
constexpr int BASE_REGS = (65536 / Plan::block) / 8 * 8 > 248 ? 248 : (65536 / Plan::block) / 8 * 8;
// A traced build gives the producer more: at 40 its trace records spill (ptxas -v), and the
// spilling producer made traced blocks 3% slower (examples/bench_trace.lua); cluster 2's needs 80.
#ifdef CUASYNC_TRACE
#define PRODUCER_REGS (CLUSTER > 1 ? 80 : 56)
#else
#define PRODUCER_REGS 40
#endif
constexpr int RAISED = BASE_REGS + (128 * (BASE_REGS - PRODUCER_REGS)) / (128 * CONSUMERS);
constexpr int CONSUMER_REGS = (RAISED > 232 ? 232 : RAISED) / 8 * 8;

// The partial of a split tile in the workspace: slot t.slot holds BM x BN f32 in the consumers'
// register order (warpgroup c's float4 q of thread tid at (c * BN / 8 + q) * 128 + tid), so that
// each access is one coalesced 16-byte load or store per thread; only this kernel reads it.
__device__ __forceinline__ float4 *partial_of(float *work, const sch::work &t, unsigned c, unsigned tid)
{
    return reinterpret_cast<float4 *>(work) + (size_t)t.slot * (BM * BN / 4) + c * (BN / 8) * 128u + tid;
}

// Is this unit the last of the block's walk? (a copy of the walk, one step on)
__device__ __forceinline__ bool last_unit(const sch::walk<Sched> &w)
{
    sch::walk<Sched> peek = w;
    sch::work u;
    return !peek.next(u);
}

extern "C" __global__ void __launch_bounds__(Plan::block, 1) gemm_tma(const __grid_constant__ cuasync::tensormap A,
    const __grid_constant__ cuasync::tensormap B, const __grid_constant__ cuasync::tensormap Cmap, out_t *C,
    float *work, unsigned *flags, unsigned M, unsigned N, unsigned K, unsigned epoch)
{
    Pipe pipe;
    pipe.init();
#if PDL
    cuasync::pdl::wait();   // the grid before this one has written what this one reads (and C)
#endif
    (void)K;
#if CLUSTER > 1
    const unsigned rank = cuasync::cluster::rank(), first = blockIdx.x / CLUSTER, step = gridDim.x / CLUSTER;
#else
    const unsigned rank = 0, first = blockIdx.x, step = gridDim.x;
#endif
    sch::walk<Sched> w(first, step);
    const unsigned group = threadIdx.x / 128u;
    if (group == 0) {
        wg::setmaxnreg_dec<PRODUCER_REGS>();
        if (!pipe.is_producer_thread()) return;
#if defined(PREFETCH_MAPS)
        // (ablation, gemm.ABLATE.prefetch_maps) the maps' descriptors fetched ahead of the first
        // copy, as CUTLASS's producer does: a block of the skinny shapes runs one tile
        cuasync::tma::prefetch_map(&A);
        cuasync::tma::prefetch_map(&B);
#endif
        auto st = pipe.producer_start();
        for (sch::work t; w.next(t);) {
            const unsigned m0 = t.m0, n0 = t.n0 + rank * BN;
            for (unsigned k = t.k_begin; k < t.k_end; ++k, st.advance()) {
                pipe.producer_acquire(st);
                pipe.producer_expect(st);
#if MULTICAST && defined(A_LEADER)
                if (rank == 0)
                    for (unsigned i = 0; i < SLICES; ++i)
                        cuasync::tma::load_multicast(pipe.slice(st, Plan::a, i), &A, pipe.full_barrier(st),
                                                     pipe.multicast_mask(Plan::a), (int)(k * BK), (int)(m0 + i * (BM / SLICES)));
#elif MULTICAST
                cuasync::tma::load_multicast(pipe.slice(st, Plan::a, rank), &A, pipe.full_barrier(st),
                                             pipe.multicast_mask(Plan::a), (int)(k * BK), (int)(m0 + rank * (BM / SLICES)));
#else
                cuasync::tma::load(pipe.buffer(st, Plan::a), &A, pipe.full_barrier(st), (int)(k * BK), (int)m0);
#endif
                cuasync::tma::load(pipe.buffer(st, Plan::b), &B, pipe.full_barrier(st), (int)(k * BK), (int)n0);
            }
        }
#if PDL
        cuasync::pdl::launch_dependents();   // every load issued
#endif
#if CLUSTER > 1
        pipe.producer_tail(st);   // no block leaves while its peer still releases into it
#endif
        return;
    }
    wg::setmaxnreg_inc<CONSUMER_REGS>();
    const unsigned c = group - 1u, tid = threadIdx.x % 128u;
    auto st = pipe.consumer_start();
#if defined(TRACE)
    const unsigned long long t_start = cuasync::watchdog::now();
    unsigned tiles_done = 0;
#endif
    float acc[BN / 2];
#if EPILOGUE
    out_t *const chunks = reinterpret_cast<out_t *>(pipe.scratch()) + c * 64u * CHUNK_COLS;
    unsigned store_slot = 0u;   // the chunk buffer next written (STORE_BUFFERS in turn, across tiles)
#endif
    const ts::group fix{ FIXUP_BARRIER, 128u * CONSUMERS, threadIdx.x == 128u };
    (void)fix; (void)work; (void)flags; (void)epoch;
    for (sch::work t; w.next(t);) {
        const unsigned m0 = t.m0, n0 = t.n0 + rank * BN;
        auto prev = st;
        for (unsigned k = t.k_begin; k < t.k_end; ++k) {
            pipe.consumer_wait(st);
            const unsigned long long a = wg::desc_kmajor(pipe.buffer(st, Plan::a) + c * 64u * 128u, 128u);
            const unsigned long long b = wg::desc_kmajor(pipe.buffer(st, Plan::b), 128u);
            wg::fence();
#pragma unroll
            for (unsigned kk = 0; kk < BK / 16; ++kk)
                wg::mma_m64k16_bf16(acc, wg::desc_advance(a, 32u * kk), wg::desc_advance(b, 32u * kk), k > t.k_begin || kk > 0);
            wg::commit_group();
            pipe.trace_store();   // a traced build stores its timeline records while the MMAs run
            // one group in flight: the previous stage's MMAs are done, its buffers may be refilled
            wg::wait_group<1>();
            if (k > t.k_begin) release(pipe, prev);
            prev = st;
            st.advance();
        }
        wg::wait_group<0>();
        release(pipe, prev);
#if PDL
        if (last_unit(w)) cuasync::pdl::launch_dependents();   // this block's last mainloop is done
#endif
        if (TURNSTILE && (t.wait || t.publish)) {
            // the k-ranges of this tile before this one have added their sums into its partial: add it
            float4 *part = partial_of(work, t, c, tid);
            if (t.wait) {
                ts::group_wait(flags, epoch, t, fix);
#pragma unroll
                for (unsigned q = 0; q < BN / 8; ++q) {
                    const float4 v = __ldcg(part + q * 128u);
                    acc[4 * q] += v.x; acc[4 * q + 1] += v.y; acc[4 * q + 2] += v.z; acc[4 * q + 3] += v.w;
                }
            }
            if (t.publish) {   // hand the sum to the next k-range; the tile's output is not this unit's
#pragma unroll
                for (unsigned q = 0; q < BN / 8; ++q)
                    __stcg(part + q * 128u, make_float4(acc[4 * q], acc[4 * q + 1], acc[4 * q + 2], acc[4 * q + 3]));
                ts::group_publish(flags, epoch, t, fix);
                continue;
            }
            ts::group_reset(flags, t, fix);   // every consumer has read the partial: the flag back to 0
        }
#if defined(TRACE)
        ++tiles_done;
#endif
        const unsigned row0 = m0 + 64u * c;
        {   // the epilogue: a range on a traced build (names: gemm.TRACE_NAMES); one atomic, answered by the close
        const cuasync::trace::range epilogue(1);
#if EPILOGUE
        // 64 x 32 chunks through shared memory; the TMA store clips at the edges of C
#pragma unroll
        for (unsigned j = 0; j < BN / CHUNK_COLS; ++j) {
            // the store that last used this buffer has read it (with two buffers, the one after
            // it, on the other buffer, may still be reading)
            if (tid == 0) cuasync::bulk::wait_group_read<STORE_BUFFERS - 1>();
            out_t *const chunk = chunks + store_slot * (CONSUMERS * 64u * CHUNK_COLS);
            store_slot = STORE_BUFFERS == 2 ? store_slot ^ 1u : 0u;
            cuasync::warpgroup::sync(1u + c);   // consumer warpgroup c: named barrier 1 + c
            cuasync::epilogue::stage_chunk<CHUNK_COLS, !PLAIN_C>(chunk, acc, j, tid);
            cuasync::bulk::fence_proxy_async_shared();   // these writes, then the async proxy reads them
            cuasync::warpgroup::sync(1u + c);   // consumer warpgroup c: named barrier 1 + c
            if (tid == 0) {
                cuasync::tma::store(&Cmap, chunk, (int)(n0 + j * CHUNK_COLS), (int)row0);
                cuasync::bulk::commit_group();
            }
        }
#elif OUT_BF16
        // accumulators i, i + 1 (i even) are neighbouring columns: one 4-byte store of the pair
        // where both are inside C and the pair is 4-byte aligned (N even), else one at a time
#pragma unroll
        for (unsigned i = 0; i < BN / 2; i += 2) {
            const unsigned r = row0 + wg::acc_row(i, tid), col = n0 + wg::acc_col(i, tid);
            if (r >= M) continue;
            if (N % 2u == 0u && col + 1u < N)
                *reinterpret_cast<__nv_bfloat162 *>(C + (size_t)r * N + col) = __floats2bfloat162_rn(acc[i], acc[i + 1]);
            else {
                if (col < N) C[(size_t)r * N + col] = (out_t)acc[i];
                if (col + 1u < N) C[(size_t)r * N + col + 1u] = (out_t)acc[i + 1];
            }
        }
#else
#pragma unroll
        for (unsigned i = 0; i < BN / 2; ++i) {
            const unsigned r = row0 + wg::acc_row(i, tid), col = n0 + wg::acc_col(i, tid);
            if (r < M && col < N) C[(size_t)r * N + col] = acc[i];
        }
#endif
        }
    }
#if EPILOGUE
    if (tid == 0) cuasync::bulk::wait_group<0>();   // every store has written C before the block exits
#endif
#if defined(TRACE)
    if (threadIdx.x == 128 && blockIdx.x < 1024) {
        unsigned long long *t = gemm_trace + 4 * blockIdx.x;
        t[0] = cuasync::sm_id() | (rank << 16); t[1] = t_start; t[2] = cuasync::watchdog::now(); t[3] = tiles_done;
    }
#endif
    (void)C;
}
