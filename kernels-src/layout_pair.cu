// layout_pair.cu — two pipelines in one kernel, placed by a cuasync.layout named "pair": pipeline
// "xs" brings chunks of x, pipeline "ys" chunks of y (bulk copies; the two may have different
// stage counts), and the consumers add them into the layout's region "sum" before copying it to
// out. One producer thread feeds both rings in turn; each ring has its own barriers, phases and
// watchdog words. No byte count, stage count or offset is written here: the Configs hold them.
//   HANG = 1 (a planted fault): the producer never loads y's last chunk, so the consumers hang on
//   pipeline ys's full barrier: the post-mortem must name "ys", not "xs".
#include <cuasync/layouts/pair.cuh>
#include <cuasync/bulk.cuh>
#include <cuasync/warpgroup.cuh>

typedef cuasync::layouts::pair Layout;
typedef cuasync::pipeline<Layout::xs_config> X;
typedef cuasync::pipeline<Layout::ys_config> Y;

static_assert(Layout::xs_config::tx_bytes == Layout::ys_config::tx_bytes, "layout_pair.cu: x and y chunks of one size");
static_assert(Layout::sum_bytes >= Layout::xs_config::tx_bytes, "layout_pair.cu: the region holds a chunk");
static_assert(Layout::xs_config::consumer_threads == 128u, "layout_pair.cu: one consumer warpgroup (its named barrier syncs the region)");
#define CHUNK (Layout::xs_config::tx_bytes / 4u)
#ifndef HANG
#define HANG 0
#endif

extern "C" __global__ void __launch_bounds__(Layout::xs_config::block) layout_pair(const float *x, const float *y, float *out,
                                                                                  unsigned chunks)
{
    X xs;
    Y ys;
    xs.init();
    ys.init();
    float *sum = reinterpret_cast<float *>(Layout::sum());
    const unsigned consumers = Layout::xs_config::consumer_threads;
    if (xs.is_producer_thread()) {
        auto sx = xs.producer_start();
        auto sy = ys.producer_start();
        for (unsigned c = blockIdx.x; c < chunks; c += gridDim.x, sx.advance(), sy.advance()) {
            xs.producer_acquire(sx);
            xs.producer_expect(sx);
            cuasync::bulk::load(xs.buffer(sx, 0), x + (size_t)c * CHUNK, Layout::xs_config::tx_bytes, xs.full_barrier(sx));
            if (HANG && c + gridDim.x >= chunks) continue;   // the planted fault: y's last chunk never comes
            ys.producer_acquire(sy);
            ys.producer_expect(sy);
            cuasync::bulk::load(ys.buffer(sy, 0), y + (size_t)c * CHUNK, Layout::ys_config::tx_bytes, ys.full_barrier(sy));
        }
    } else if (xs.is_consumer()) {
        auto sx = xs.consumer_start();
        auto sy = ys.consumer_start();
        const unsigned i0 = xs.consumer_index();
        for (unsigned c = blockIdx.x; c < chunks; c += gridDim.x, sx.advance(), sy.advance()) {
            xs.consumer_wait(sx);
            ys.consumer_wait(sy);
            const float *a = reinterpret_cast<const float *>(xs.buffer(sx, 0));
            const float *b = reinterpret_cast<const float *>(ys.buffer(sy, 0));
            for (unsigned e = i0; e < CHUNK; e += consumers) sum[e] = a[e] + b[e];
            xs.consumer_release(sx);
            ys.consumer_release(sy);
            cuasync::warpgroup::sync(1u);   // the region is whole before it is read back
            for (unsigned e = i0; e < CHUNK; e += consumers) out[(size_t)c * CHUNK + e] = sum[(e + 32u) % CHUNK];
            cuasync::warpgroup::sync(1u);   // and read before the next chunk overwrites it
        }
    }
}
