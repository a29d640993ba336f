// pipeline_multicast.cu — a cuasync.pipeline plan with a cluster (any shape) and its load
// multicast along one dimension: every block of a cluster needs the same tile (BOX_Y rows of a
// BOX_X-wide matrix); along its multicast line, block i loads slice i of it (the map's box:
// BOX_Y / slices rows) and multicasts it to the line, so each block's stage receives the whole
// tile. Block r's consumers copy the tile to out + r * plane (r: its cluster rank); they release
// the stage in every block whose copies land here, in the plan's release form (warpgroup: each
// consumer warpgroup syncs first, its reads being ordinary loads); the producer waits out its
// peers at the end (producer_tail). Clusters take tiles round-robin (the grid's clusters counted
// over x, y, z). HANG = 5 plants a fault for the watchdog specs.
#include <cuasync/pipelines/mc.cuh>
#include <cuasync/tma.cuh>
#include <cuasync/warpgroup.cuh>

typedef cuasync::pipelines::mc Plan;

extern "C" __global__ void __launch_bounds__(Plan::block) pipeline_multicast(const __grid_constant__ cuasync::tensormap in,
    float *out, unsigned tiles, unsigned long long plane)
{
    cuasync::pipeline<Plan> pipe;
    pipe.init();
    const cuasync::cluster::dim id = cuasync::cluster::id(), count = cuasync::cluster::count();
    const unsigned cid = id.x + count.x * (id.y + count.y * id.z), clusters = count.x * count.y * count.z;
    const unsigned n = cid < tiles ? (tiles - cid + clusters - 1) / clusters : 0u;
    const unsigned slice_rows = BOX_Y / Plan::load_slices[Plan::a];
    if (pipe.is_producer_thread()) {
        auto st = pipe.producer_start();
        const unsigned r = pipe.slice_index(Plan::a);
        const unsigned short mask = pipe.multicast_mask(Plan::a);
        for (unsigned i = 0; i < n; ++i, st.advance()) {
            const unsigned t = cid + i * clusters;
            pipe.producer_acquire(st);
            pipe.producer_expect(st);
            cuasync::tma::load_multicast(pipe.slice(st, Plan::a, r), &in, pipe.full_barrier(st), mask,
                                         0, (int)(t * BOX_Y + r * slice_rows));
        }
        pipe.producer_tail(st);
    } else if (pipe.is_consumer()) {
        auto st = pipe.consumer_start();
        float *mine = out + cuasync::cluster::rank() * plane;
        for (unsigned i = 0; i < n; ++i, st.advance()) {
            const unsigned t = cid + i * clusters;
            pipe.consumer_wait(st);
            const float4 *stage = reinterpret_cast<const float4 *>(pipe.buffer(st, Plan::a));
            float4 *o = reinterpret_cast<float4 *>(mine + (size_t)t * BOX_Y * BOX_X);
            for (unsigned e = pipe.consumer_index(); e < BOX_Y * BOX_X / 4; e += Plan::consumer_threads) o[e] = stage[e];
#if defined(HANG) && HANG == 5
            // planted for the watchdog specs: block rank 1 releases its own stage only, never the
            // peer's, so block 0's producer waits forever on its empty barrier
            if (cuasync::cluster::rank() == 1u) {
                __syncwarp();
                if ((threadIdx.x & 31u) == 0u) cuasync::mbarrier::arrive(pipe.empty(st.index));
                continue;
            }
#endif
            if (Plan::release == 2) cuasync::warpgroup::sync(1u + pipe.consumer_index() / 128u);
            pipe.consumer_release(st);
        }
    }
}
