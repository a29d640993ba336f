// A toy product over k, scheduled by a cuasync.scheduler named "toy": C[m, n] = sum over k of
// A[m, k] * B[k, n] (f32, row-major), one thread per output element of a bm x bn tile (block =
// bm * bn threads), straight from global memory. The point is the schedule, not the speed: each
// unit of the walk (scheduler.cuh) sums its k-tiles, then
//   turnstile (stream-K, serial split-K): waits for this launch's k-tiles before it
//     (turnstile.cuh, epoch = sched:next_epoch()), adds the tile's partial (f32, at t.slot in
//     `work`), and either publishes the sum or writes C and resets the tile's flag;
//   reduce (split-K): every rank of the cluster leaves its partial in its shared memory, rank 0
//     adds its peers' through DSMEM in rank order and writes C.
// With SCHED_SUM_GROUP the block has one more warp, beside the bm * bn consumer threads, that walks
// the units but never reaches the fix-up (a producer's place in a warp-specialized kernel): the
// consumers use the turnstile's group_* forms (named barrier 1), and in the reduce mode the extra
// warp joins every cluster sync (cluster::sync needs every thread of each block of the cluster).
// The walk each CTA took goes to `trace` (4 words a unit: tile, k_begin, k_end, wait | publish << 1
// | epilogue << 2; at most trace_max units a CTA), so a spec compares it with sched:units(c).
// skip_signal: a CTA whose publishes store no flag (a planted hang: the watchdog names the wait
// that follows; 0xFFFFFFFF: none).
#include <cuasync/cluster.cuh>
#include <cuasync/schedulers/toy.cuh>

using Config = cuasync::schedulers::toy;
namespace sch = cuasync::scheduler;
namespace ts = cuasync::turnstile;

constexpr unsigned consumers = Config::bm * Config::bn;
#ifdef SCHED_SUM_GROUP
static_assert(consumers % 32u == 0u, "a named barrier counts whole warps: bm * bn must be a multiple of 32");
constexpr unsigned threads = consumers + 32u;
#define FIXUP(f, ...) ts::group_##f(__VA_ARGS__, g)
#else
constexpr unsigned threads = consumers;
#define FIXUP(f, ...) ts::block_##f(__VA_ARGS__)
#endif

extern "C" __global__ void __launch_bounds__(threads) sched_sum(const float *A, const float *B, float *C,
    float *work, unsigned *flags, unsigned *trace, unsigned trace_max, unsigned epoch, unsigned skip_signal)
{
    __shared__ float partial[consumers];
    const unsigned tid = threadIdx.x, r = tid / Config::bn, c = tid % Config::bn;
    sch::walk<Config> w(blockIdx.x, gridDim.x);
#ifdef SCHED_SUM_GROUP
    const ts::group g{ 1u, consumers, tid == 0u };
    if (tid >= consumers) {   // the extra warp: the walk, never the fix-up (reduce: its cluster syncs)
        for (sch::work t; w.next(t);) {
            if (Config::kind == sch::split_k && Config::mode == sch::reduce) {
                cuasync::cluster::sync();
                cuasync::cluster::sync();
            }
        }
        return;
    }
#endif
    unsigned i = 0;
    for (sch::work t; w.next(t); ++i) {
        if (tid == 0u && i < trace_max) {
            unsigned *o = trace + 4u * (blockIdx.x * trace_max + i);
            o[0] = t.tile; o[1] = t.k_begin; o[2] = t.k_end;
            o[3] = (t.wait ? 1u : 0u) | (t.publish ? 2u : 0u) | (t.epilogue ? 4u : 0u);
        }
        const unsigned row = t.m0 + r, col = t.n0 + c;
        const bool inside = row < Config::m && col < Config::n;
        const unsigned k0 = t.k_begin * Config::bk;
        const unsigned k1 = t.k_end * Config::bk < Config::k ? t.k_end * Config::bk : Config::k;
        float acc = 0.0f;
        if (inside)
            for (unsigned k = k0; k < k1; ++k) acc += A[(unsigned long long)row * Config::k + k] * B[(unsigned long long)k * Config::n + col];
        if (Config::kind == sch::split_k && Config::mode == sch::reduce) {
            partial[tid] = acc;
            cuasync::cluster::sync();   // every rank's partial is in its shared memory
            if (t.wait) {                // rank 0: its peers' partials, in rank order
                for (unsigned p = 1; p < Config::splits; ++p) acc += *cuasync::cluster::map_shared_rank(&partial[tid], p);
                if (inside) C[(unsigned long long)row * Config::n + col] = acc;
            }
            cuasync::cluster::sync();   // rank 0 has read them: the next tile may overwrite
            continue;
        }
        float *slot = work + (unsigned long long)t.slot * consumers + tid;   // read only where t.slot is one
        if (t.wait) {
            FIXUP(wait, flags, epoch, t);
            acc = __ldcg(slot) + acc;
        }
        if (t.publish) {
            __stcg(slot, acc);
            if (blockIdx.x != skip_signal) FIXUP(publish, flags, epoch, t);
        } else {
            if (inside) C[(unsigned long long)row * Config::n + col] = acc;
            if (t.wait) FIXUP(reset, flags, t);
        }
    }
}
