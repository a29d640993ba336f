// pipeline_tma.cu — a 2D tiled copy through a cuasync.pipeline plan: the producer thread loads
// box-sized tiles of `in` with TMA into the plan's stage ring; the consumers copy each stage to
// `out` with 16-byte stores and release it. The plan (its generated <cuasync/pipelines/tma.cuh>)
// fixes the stages, the byte count armed on `full`, the offsets and the roles: no byte count or
// shared-memory offset is written here. Both role forms: partitioned (a producer warp beside the
// consumer warps) and unified (every thread consumes; thread 0 also refills a stage once it has
// released it). Blocks take tiles round-robin; tile t is box (t % tiles_x, t / tiles_x).
#include <cuasync/pipelines/tma.cuh>
#include <cuasync/tma.cuh>

typedef cuasync::pipelines::tma Plan;
typedef cuasync::pipeline<Plan> Pipe;

struct tiles_of_block {
    unsigned tiles_x, n;
    __device__ unsigned tile(unsigned i) const { return blockIdx.x + i * gridDim.x; }
    __device__ int x(unsigned i) const { return (int)((tile(i) % tiles_x) * BOX_X); }
    __device__ int y(unsigned i) const { return (int)((tile(i) / tiles_x) * BOX_Y); }
};

__device__ __forceinline__ void produce(const Pipe &pipe, const Pipe::state &st, const cuasync::tensormap *in,
                                        const tiles_of_block &tb, unsigned i)
{
    pipe.producer_acquire(st);
    pipe.producer_expect(st);
    cuasync::tma::load(pipe.buffer(st, Plan::in), in, pipe.full_barrier(st), tb.x(i), tb.y(i));
}

__device__ __forceinline__ void consume(const Pipe &pipe, const Pipe::state &st, float *out, unsigned width,
                                        const tiles_of_block &tb, unsigned i)
{
    const unsigned row4 = BOX_X / 4;
    pipe.consumer_wait(st);
    const float4 *stage = reinterpret_cast<const float4 *>(pipe.buffer(st, Plan::in));
    float *o = out + (size_t)tb.y(i) * width + tb.x(i);
    for (unsigned e = pipe.consumer_index(); e < BOX_Y * row4; e += Plan::consumer_threads)
        *reinterpret_cast<float4 *>(o + (size_t)(e / row4) * width + 4 * (e % row4)) = stage[e];
    pipe.consumer_release(st);
}

extern "C" __global__ void __launch_bounds__(Plan::block) pipeline_tma(const __grid_constant__ cuasync::tensormap in,
    float *out, unsigned width, unsigned tiles_x, unsigned tiles)
{
    Pipe pipe;
    pipe.init();
    const tiles_of_block tb{ tiles_x, blockIdx.x < tiles ? (tiles - blockIdx.x + gridDim.x - 1) / gridDim.x : 0u };
    if (Plan::unified) {
        auto pst = pipe.producer_start();
        auto cst = pipe.consumer_start();
        if (pipe.is_producer_thread())
            for (unsigned i = 0; i < tb.n && i < (unsigned)Plan::stages; ++i, pst.advance()) produce(pipe, pst, &in, tb, i);
        for (unsigned i = 0; i < tb.n; ++i, cst.advance()) {
            consume(pipe, cst, out, width, tb, i);
            if (pipe.is_producer_thread() && i + Plan::stages < tb.n) { produce(pipe, pst, &in, tb, i + Plan::stages); pst.advance(); }
        }
    } else if (pipe.is_producer_thread()) {
        auto st = pipe.producer_start();
        for (unsigned i = 0; i < tb.n; ++i, st.advance()) produce(pipe, st, &in, tb, i);
    } else if (pipe.is_consumer()) {
        auto st = pipe.consumer_start();
        for (unsigned i = 0; i < tb.n; ++i, st.advance()) consume(pipe, st, out, width, tb, i);
    }
}
