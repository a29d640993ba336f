// order_log.cu — consumer groups taking turns through a plan's ordered barrier (ping-pong). The
// plan (<cuasync/pipelines/pingpong.cuh>: a bulk-copy pipeline, consumer warpgroups in groups,
// order = { name = "math", groups = G, depth = 2 }, scratch for the logs) fixes every count and
// offset. The producer thread streams `tiles` x `k_tiles` chunks of `in` (Plan::tx_bytes each)
// through the stages; tile t belongs to group t % G (consume = "alternate": a group's pipeline
// state starts at its first tile, math.first, and moves past the others', math.skip_others). A
// group's round:
//   turn 0 (the mainloop): sum its tile's chunks (each stage released by this group alone);
//   turn 1 (the epilogue): add its part of the sum into sums[t].
// At the start of each turn, lane 0 of each warp of the group appends (group << 16 | t) to that
// stage's log in shared memory, sleeps, and appends again at the end: if the groups take turns,
// each stage's log reads, tile by tile, 2 x order_group_warps entries of (t % G, t) (a start and
// an end from each warp; the warps of a group are not in step). log_out: [count0, count1,
// log0[cap], log1[cap]]. One block.
// ORDER_SKIP_PASS=g: group g skips its first pass_turn at turn ORDER_SKIP_TURN (default 0, the
// mainloop's): a planted hang for the watchdog. With tiles = 2 and k_tiles = 1 only group 1
// waits then (the producer's two stages are fresh, group 0 has no second tile).
#include <cuasync/pipelines/pingpong.cuh>
#include <cuasync/bulk.cuh>

typedef cuasync::pipelines::pingpong Plan;
typedef cuasync::pipeline<Plan> Pipe;

static_assert(Plan::order_depth == 2, "order_log.cu: the plan's order has two turns a round (mainloop, epilogue)");
#define CHUNK (Plan::tx_bytes / 4u)
#ifdef ORDER_SKIP_PASS
#ifndef ORDER_SKIP_TURN
#define ORDER_SKIP_TURN 0
#endif
#define PASSES(d) (!(math.group == ORDER_SKIP_PASS && t == math.group && (d) == ORDER_SKIP_TURN))
#else
#define PASSES(d) true
#endif
#define LOG_CAP ((Plan::scratch_bytes / 4u - 2u) / 2u)

// Lane 0 of each warp of the group: one entry in stage d's log (the end mark sets bit 15).
__device__ __forceinline__ void note(unsigned *logs, unsigned d, unsigned group, unsigned t, unsigned end)
{
    if ((threadIdx.x & 31u) != 0u) return;
    const unsigned slot = atomicAdd(&logs[d], 1u);
    if (slot < LOG_CAP) logs[2u + d * LOG_CAP + slot] = (group << 16) | (end << 15) | t;
}

extern "C" __global__ void __launch_bounds__(Plan::block) order_log(const unsigned *in, unsigned *sums, unsigned *log_out,
                                                                     unsigned tiles, unsigned k_tiles)
{
    Pipe pipe;
    unsigned *logs = reinterpret_cast<unsigned *>(pipe.scratch());
    if (threadIdx.x == 0) logs[0] = logs[1] = 0u;   // ordered before any use by init's block sync
    pipe.init();
    if (pipe.is_producer_thread()) {
        auto st = pipe.producer_start();
        for (unsigned i = 0; i < tiles * k_tiles; ++i, st.advance()) {
            pipe.producer_acquire(st);
            pipe.producer_expect(st);
            cuasync::bulk::load(pipe.buffer(st, 0), in + (size_t)i * CHUNK, Plan::tx_bytes, pipe.full_barrier(st));
        }
    } else if (pipe.is_consumer()) {
        const cuasync::ordered<Plan> math(pipe);
        const unsigned G = Plan::order_groups, lane = pipe.consumer_index() % (32u * Plan::order_group_warps);
        auto turn = math.start();
        auto st = pipe.consumer_start();
        math.first(st, k_tiles);                                 // this group's first tile
        for (unsigned t = math.group; t < tiles; t += G) {
            math.wait_turn(turn);                                // turn 0: the mainloop
            note(logs, 0u, math.group, t, 0u);
            unsigned acc = 0u;
            for (unsigned j = 0; j < k_tiles; ++j, st.advance()) {
                pipe.consumer_wait(st);
                const unsigned *stage = reinterpret_cast<const unsigned *>(pipe.buffer(st, 0));
                for (unsigned e = lane; e < CHUNK; e += 32u * Plan::order_group_warps) acc += stage[e];
                pipe.consumer_release(st);
            }
            __nanosleep(2000);
            note(logs, 0u, math.group, t, 1u);
            if (PASSES(0)) math.pass_turn(turn);
            turn.advance();
            math.skip_others(st, k_tiles);                       // past the other groups' tiles
            math.wait_turn(turn);                                // turn 1: the epilogue
            note(logs, 1u, math.group, t, 0u);
            atomicAdd(&sums[t], acc);
            __nanosleep(2000);
            note(logs, 1u, math.group, t, 1u);
            if (PASSES(1)) math.pass_turn(turn);
            turn.advance();
        }
    }
    __syncthreads();
    for (unsigned i = threadIdx.x; i < 2u + 2u * LOG_CAP; i += blockDim.x) log_out[i] = logs[i];
}
