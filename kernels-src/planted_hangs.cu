// planted_hangs.cu — pipeline_tma.cu's tiled copy through a cuasync.pipeline plan, with one fault
// planted (HANG), for the watchdog specs. Each hangs at a known barrier, stage and iteration:
//   1  bytes armed != bytes delivered: full armed with tx_bytes + TX_DELTA  -> consumers, full[0]
//   2  an arrival missing: consumer warp 3 never releases             -> producer, empty[0], iteration stages
//   3  a wait on the wrong parity: the producer starts on phase 0 (the consumer's) -> producer, empty[0],
//      iteration 0 (its consumers start 100 us late, so that the producer's is the earliest wait). A
//      parity flipped later would not hang: the wait would pass early and the producer would arm a
//      stage twice, an over-arrival the hardware answers with a launch failure.
//   4  the producer leaves after LEAVE_AT tiles                          -> consumers, full[LEAVE_AT % stages]
//   0  no fault (the same kernel runs and verifies).
#include <cuasync/pipelines/hang.cuh>
#include <cuasync/tma.cuh>

#ifndef HANG
#define HANG 0
#endif
#ifndef TX_DELTA
#define TX_DELTA 16
#endif
#ifndef LEAVE_AT
#define LEAVE_AT 1
#endif

typedef cuasync::pipelines::hang Plan;

extern "C" __global__ void __launch_bounds__(Plan::block) planted(const __grid_constant__ cuasync::tensormap in,
    float *out, unsigned width, unsigned tiles_x, unsigned tiles)
{
    cuasync::pipeline<Plan> pipe;
    pipe.init();
    const unsigned n = blockIdx.x < tiles ? (tiles - blockIdx.x + gridDim.x - 1) / gridDim.x : 0u;
    if (pipe.is_producer_thread()) {
#if HANG == 3
        auto st = pipe.consumer_start();
#else
        auto st = pipe.producer_start();
#endif
        for (unsigned i = 0; i < n; ++i, st.advance()) {
            const unsigned t = blockIdx.x + i * gridDim.x;
#if HANG == 4
            if (i == LEAVE_AT) break;
#endif
            pipe.producer_acquire(st);
#if HANG == 1
            pipe.producer_expect_bytes(st, Plan::tx_bytes + TX_DELTA);
#else
            pipe.producer_expect(st);
#endif
            cuasync::tma::load(pipe.buffer(st, Plan::in), &in, pipe.full_barrier(st),
                               (int)((t % tiles_x) * BOX_X), (int)((t / tiles_x) * BOX_Y));
        }
    } else if (pipe.is_consumer()) {
        auto st = pipe.consumer_start();
        const unsigned row4 = BOX_X / 4;
#if HANG == 3
        cuasync::watchdog::pause_ns(100000);
#endif
        for (unsigned i = 0; i < n; ++i, st.advance()) {
            const unsigned t = blockIdx.x + i * gridDim.x;
            pipe.consumer_wait(st);
            const float4 *stage = reinterpret_cast<const float4 *>(pipe.buffer(st, Plan::in));
            float *o = out + (size_t)((t / tiles_x) * BOX_Y) * width + (t % tiles_x) * BOX_X;
            for (unsigned e = pipe.consumer_index(); e < BOX_Y * row4; e += Plan::consumer_threads)
                *reinterpret_cast<float4 *>(o + (size_t)(e / row4) * width + 4 * (e % row4)) = stage[e];
#if HANG == 2
            if (pipe.consumer_index() / 32u == 3u) continue;
#endif
            pipe.consumer_release(st);
        }
    }
}
