// A toy product over k, scheduled by a cuasync.scheduler named "toy": C[m, n] = sum over k of
// A[m, k] * B[k, n] (f32, row-major), one thread per output element of a bm x bn tile (block =
// bm * bn threads), straight from global memory. The point is the schedule, not the speed: each
// unit of the walk (scheduler.cuh) sums its k-tiles, then
//   turnstile (stream-K, serial split-K): waits for the k-tiles before it (turnstile.cuh), adds
//     the tile's partial (f32, one slot a tile in `work`), and either publishes the sum or writes
//     C and resets the tile's flag;
//   reduce (split-K): every rank of the cluster leaves its partial in its shared memory, rank 0
//     adds its peers' through DSMEM in rank order and writes C.
// The walk each CTA took goes to `trace` (4 words a unit: tile, k_begin, k_end, wait | publish << 1
// | epilogue << 2; at most trace_max units a CTA), so a spec compares it with sched:units(c).
#include <cuasync/cluster.cuh>
#include <cuasync/schedulers/toy.cuh>

using Config = cuasync::schedulers::toy;
namespace sch = cuasync::scheduler;

extern "C" __global__ void __launch_bounds__(Config::bm * Config::bn) sched_sum(const float *A, const float *B, float *C,
    float *work, unsigned *flags, unsigned *trace, unsigned trace_max)
{
    __shared__ float partial[Config::bm * Config::bn];
    const unsigned tid = threadIdx.x, r = tid / Config::bn, c = tid % Config::bn;
    sch::walk<Config> w(blockIdx.x, gridDim.x);
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
        float *slot = work + (unsigned long long)t.tile * (Config::bm * Config::bn) + tid;
        if (t.wait) {
            cuasync::turnstile::block_wait(flags, t.tile, t.k_begin);
            acc = __ldcg(slot) + acc;
        }
        if (t.publish) {
            __stcg(slot, acc);
            cuasync::turnstile::block_publish(flags, t.tile, t.k_end);
        } else {
            if (inside) C[(unsigned long long)row * Config::n + col] = acc;
            if (t.wait) cuasync::turnstile::block_reset(flags, t.tile);
        }
    }
}
