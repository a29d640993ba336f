// cp_async_copy.cu — a cp.async pipeline built from a cuasync.pipeline plan (its generated
// <cuasync/pipelines/cp.cuh>: stages, vector size, .cg/.ca, copies per thread, completion form,
// counts and offsets; none of them is written here). The producer threads copy tile after tile
// of `in` into the stage ring with cp.async; the consumer threads store each stage to `out` with
// 16-byte stores, each thread storing vectors that other threads copied (so the pipeline's
// barriers are what make the result right), and release it.
//   cp_copy    out = in, tiles of the stage's bytes (a streaming copy through shared memory);
//              planned with zero_fill, a last partial tile is padded with zeros
//   cp_gather  out row r = in row idx[r], rows of Plan::load_row[0] bytes (a gather)
// Both role forms: unified (producer = "all": every thread copies and consumes; tile i + stages
// is issued after tile i is released) and partitioned (producer threads beside consumer warps).
// Blocks take tiles round-robin. Planted hangs (spec/core/watchdog_spec.lua): PLANTED = 1, thread 5
// never commits iteration 2 (completion "mbarrier": full[2 % stages] waits for its noinc arrival
// forever); PLANTED = 2, thread 5 of a unified block leaves before iteration 2 (completion
// "group": its arrival on full after its wait_group never comes).
#include <cuasync/pipelines/cp.cuh>

#ifndef PLANTED
#define PLANTED 0
#endif

typedef cuasync::pipelines::cp Plan;
typedef cuasync::pipeline<Plan> Pipe;
typedef unsigned long long u64;
constexpr unsigned TILE = Plan::load_box_bytes[Plan::x];   // bytes per stage
constexpr unsigned ROW = Plan::load_row[Plan::x];

// The source of tile t: contiguous (of `bytes` in all: with zero_fill planned, a last partial
// tile reads as zeros past the end), or rows gathered through idx.
struct contiguous {
    static constexpr bool is_contiguous = true;
    const unsigned char *in;
    u64 bytes;
    __device__ const unsigned char *tile(u64 t) const { return in + t * TILE; }
    __device__ unsigned valid(u64 t) const { return bytes - t * TILE < TILE ? (unsigned)(bytes - t * TILE) : TILE; }
};
struct gathered {
    static constexpr bool is_contiguous = false;
    const unsigned char *in;
    const unsigned *idx;
    __device__ auto tile(u64 t) const
    {
        const unsigned char *base = in;
        const unsigned *rows = idx + t * (TILE / ROW);
        return [=](unsigned r) { return base + (u64)rows[r] * ROW; };
    }
};

template <class Source>
__device__ __forceinline__ void produce(Pipe &pipe, const Pipe::state &st, const Source &src, u64 t)
{
    pipe.producer_acquire(st);
    if constexpr (Plan::load_zero_fill[Plan::x] && Source::is_contiguous)
        pipe.template producer_copy<Plan::x>(st, src.tile(t), src.valid(t));
    else
        pipe.producer_copy(st, Plan::x, src.tile(t));
    if (PLANTED == 1 && st.iteration == 2 && threadIdx.x == 5) return;
    pipe.producer_commit(st);
}

// The streaming copy stores one vector per pass (OnePerPass): unrolled, the compiler issued each
// thread's stores in a burst (4 x 16 B per warp at once), which on the H200 starved some of an
// SM's blocks and cost ~1% of the copy; the yardsticks store the same way. The gather keeps the
// compiler's unrolling: one per pass, it lost up to 25% with noinc arrivals at 5 to 8 stages
// (2 or 1 blocks per SM). docs/cp-async.md has the figures.
template <bool OnePerPass>
__device__ __forceinline__ void consume(Pipe &pipe, const Pipe::state &st, uint4 *out, u64 t)
{
    constexpr unsigned V = TILE / 16;
    pipe.consumer_wait(st);
    const uint4 *stage = reinterpret_cast<const uint4 *>(pipe.buffer(st, Plan::x));
    uint4 *o = out + t * V;
    auto store = [&](unsigned e) {
        const unsigned v = (e + 32u) % V;    // another warp's copies
        o[v] = stage[v];
    };
    if constexpr (OnePerPass) {
#pragma unroll 1
        for (unsigned e = pipe.consumer_index(); e < V; e += Plan::consumer_threads) store(e);
    } else {
        for (unsigned e = pipe.consumer_index(); e < V; e += Plan::consumer_threads) store(e);
    }
    pipe.consumer_release(st);
}

template <class Source>
__device__ __forceinline__ void run(uint4 *out, const Source &src, u64 tiles)
{
    Pipe pipe;
    pipe.init();
    const u64 n = blockIdx.x < tiles ? (tiles - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
    auto tile = [&](u64 i) { return blockIdx.x + i * gridDim.x; };
    if (Plan::unified) {
        auto pst = pipe.producer_start();
        auto cst = pipe.consumer_start();
        for (u64 i = 0; i < n && i < (u64)Plan::stages; ++i, pst.advance()) produce(pipe, pst, src, tile(i));
        for (u64 i = 0; i < n; ++i, cst.advance()) {
            if (PLANTED == 2 && i == 2 && threadIdx.x == 5) return;
            consume<Source::is_contiguous>(pipe, cst, out, tile(i));
            if (i + Plan::stages < n) { produce(pipe, pst, src, tile(i + Plan::stages)); pst.advance(); }
        }
    } else if (pipe.is_producer_thread()) {
        auto st = pipe.producer_start();
        for (u64 i = 0; i < n; ++i, st.advance()) produce(pipe, st, src, tile(i));
    } else if (pipe.is_consumer()) {
        auto st = pipe.consumer_start();
        for (u64 i = 0; i < n; ++i, st.advance()) consume<Source::is_contiguous>(pipe, st, out, tile(i));
    }
}

// out holds whole tiles: (bytes + TILE - 1) / TILE of them.
extern "C" __global__ void __launch_bounds__(Plan::block) cp_copy(uint4 *out, const uint4 *in, u64 bytes)
{
    run(out, contiguous{ reinterpret_cast<const unsigned char *>(in), bytes }, (bytes + TILE - 1) / TILE);
}

extern "C" __global__ void __launch_bounds__(Plan::block) cp_gather(uint4 *out, const uint4 *in, const unsigned *idx, u64 tiles)
{
    run(out, gathered{ reinterpret_cast<const unsigned char *>(in), idx }, tiles);
}
