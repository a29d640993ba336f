// cuasync/order.cuh — the ordered barrier of a cuasync.pipeline plan (order = { groups, depth,
// name }): consumer groups taking turns, as ping-pong warpgroups do (CUTLASS's
// OrderedSequenceBarrier). A group's round goes through Config::order_depth turns (say 0 the
// mainloop, 1 the epilogue); group g enters its turn at stage d only after group g - 1 passed its
// own there, and group 0 only after the last group passed its previous round's. Every count and
// offset is the plan's (Config::order_*, generated): the kernel writes none.
//   cuasync::ordered<Plan> math(pipe);        // every thread of a consumer group: its group
//   auto turn = math.start();
//   auto st = pipe.consumer_start(); math.first(st, k_tiles);   // past the groups before this one
//   for each of the group's tiles (t = group, group + groups, ...):
//       math.wait_turn(turn); ...mainloop: k_tiles x consumer_wait/release...; math.pass_turn(turn); turn.advance();
//       math.skip_others(st, k_tiles);        // past the other groups' tiles (consume = "alternate")
//       math.wait_turn(turn); ...epilogue...; math.pass_turn(turn); turn.advance();
// Barrier [d][g] lies at Config::order_offset + 8 (d order_groups + g) in the plan's dynamic
// shared memory: group g waits on it, group g - 1 (mod groups) arrives on it. pipeline<Config>'s
// init() initializes it (order_init, below) with Config::order_count: one lane of each warp of a
// group (order_arrive 1, after __syncwarp) or every thread (0). Group 0 starts on parity 1 (its
// first turn passes on the fresh barrier), the others on 0; a turn's state is a
// stage_state<order_depth> (ring.cuh), whose parity flips each time its index wraps. Waits go
// through watchdog::spin_until with a site (role Config::order_role, the plan's): a hang names
// the ordered barrier, the group, the stage and the round. Traced, a group stores the records
// its pipeline holds (pipeline_stages::trace_store) before it waits for a turn: a group killed
// there keeps its last release in the post-mortem. No PTX of its own: mbarrier.cuh's waits and
// arrivals.
#pragma once

#include <cuasync/mbarrier.cuh>
#include <cuasync/ring.cuh>

namespace cuasync {

template <class Config> struct pipeline;   // its progress words (the watchdog's), at instantiation
template <class Config> struct pipeline_stages;   // its held trace records (trace_store), at instantiation

namespace detail {
template <class T> struct order_void { typedef void type; };
// Whether the plan has an order (its Config declares order_groups). Enumerators, not static
// members: a static constexpr member of a template would become a global in every plan's PTX.
template <class Config, class = void> struct order_has { enum { value = 0, depth = 1 }; };
template <class Config>
struct order_has<Config, typename order_void<decltype(Config::order_groups)>::type> {
    enum { value = 1, depth = (int)Config::order_depth };
};

template <class Config, int = order_has<Config>::value> struct order_init_barriers {
    __device__ static void run(unsigned char *) {}
};
template <class Config> struct order_init_barriers<Config, 1> {
    __device__ static void run(unsigned char *base)
    {
        mbarrier_t *b = reinterpret_cast<mbarrier_t *>(base + Config::order_offset);
        for (unsigned i = 0; i < Config::order_depth * Config::order_groups; ++i) mbarrier::init(b + i, Config::order_count);
    }
};
} // namespace detail

// Thread 0, in pipeline<Config>::init before its fence and block sync: initialize the plan's
// ordered barrier (nothing for a plan without an order: its code is unchanged).
template <class Config>
__device__ __forceinline__ void order_init(unsigned char *base) { detail::order_init_barriers<Config>::run(base); }

// The ordered barrier of plan Config, seen from one consumer group.
template <class Config>
struct ordered {
    static_assert(detail::order_has<Config>::value,
                  "cuasync: ordered<Config> needs a plan with order = { groups = n, ... } (cuasync.pipeline's order field)");
    typedef stage_state<detail::order_has<Config>::depth> state;

    unsigned char *base;   // the plan's dynamic shared memory (pipeline<Config>::base)
    unsigned group;
#ifdef CUASYNC_TRACE
    const pipeline_stages<Config> *pipe_;   // the plan's pipeline, whose held records a wait stores first
#endif

    // The group of the calling consumer thread: consumer warps in order, order_group_warps each.
    __device__ static unsigned group_of()
    {
        return (threadIdx.x - 32u * Config::producer_warps) / (32u * Config::order_group_warps);
    }
    // From the plan's pipeline (pipeline<Config>), for this thread's group or a given one. Traced,
    // it keeps a pointer to it (not a copy: the pipeline's held records are the original's).
    // (A pipeline of another plan does not convert to pipeline_stages<Config>: refused.)
    template <class Pipe>
    __device__ explicit ordered(const Pipe &pipe) : base(pipe.base), group(group_of())
    {
        (void)static_cast<const pipeline_stages<Config> *>(&pipe);
#ifdef CUASYNC_TRACE
        pipe_ = &pipe;
#endif
    }
    template <class Pipe>
    __device__ ordered(const Pipe &pipe, unsigned g) : base(pipe.base), group(g)
    {
        (void)static_cast<const pipeline_stages<Config> *>(&pipe);
#ifdef CUASYNC_TRACE
        pipe_ = &pipe;
#endif
    }

    // Where this group's turns start: group 0 on parity 1 (the fresh barrier passes its first
    // wait), the others on parity 0 (they wait for the group before them).
    __device__ state start() const { return state{ 0, group == 0u ? 1u : 0u, 0u }; }

    // A group's pipeline state with consume = "alternate" (tile t is group t % groups'), from
    // pipe.consumer_start(): move it past the tiles of the groups before this one (`iterations`
    // pipeline iterations a tile), to this group's first tile. Without it (and skip_others) a
    // group reads another group's stages and releases them again (an over-arrival on empty).
    // With consume = "all" every group reads every stage: nothing. (order_plan.lua's first,
    // which the CPU model walks.)
    template <class State>
    __device__ void first(State &st, unsigned iterations) const
    {
        if (Config::order_alternate) st.advance(group * iterations);
    }
    // After this group's tile (its `iterations` consumed): move st past the other groups' tiles,
    // to this group's next. With consume = "all": nothing. (order_plan.lua's skip.)
    template <class State>
    __device__ void skip_others(State &st, unsigned iterations) const
    {
        if (Config::order_alternate) st.advance((Config::order_groups - 1u) * iterations);
    }

    // Barrier [d][g].
    __device__ mbarrier_t *barrier(unsigned d, unsigned g) const
    {
        return reinterpret_cast<mbarrier_t *>(base + Config::order_offset) + d * Config::order_groups + g;
    }

    // What the watchdog records for this group's wait at st: Config::order_role (a turn), the
    // stage, and the turns taken (st.iteration: round x depth + stage); the arrivals [d][g] received.
    __device__ watchdog::site site(const state &st) const
    {
#ifdef CUASYNC_WATCHDOG
        const unsigned received = smem_addr(pipeline<Config>::progress() + Config::order_progress +
                                            (unsigned)st.index * Config::order_groups + group);
#else
        const unsigned received = 0u;
#endif
        watchdog::site s{ smem_addr(barrier((unsigned)st.index, group)), st.phase, smem_addr(base) - Config::base_offset, (unsigned)st.index,
                          Config::order_role, st.iteration, received, 0u };
#ifdef CUASYNC_TRACE
        s.trace_ring = CUASYNC_TRACE_OFF;   // a turn is not a pipeline event of the timeline
#endif
        return s;
    }

    // Every thread of the group: wait until the group before passed its turn at st's stage.
    __device__ void wait_turn(const state &st) const
    {
#ifdef CUASYNC_TRACE
        pipe_->trace_store();   // the thread is about to spin: its pipeline's held records first
#endif
        mbarrier::wait_parity(barrier((unsigned)st.index, group), st.phase, site(st));
    }

    // Every thread of the group, when done with its turn at st (the pair of wait_turn): the next
    // group may enter its turn there. Then st.advance(), as for a pipeline's state.
    __device__ void pass_turn(const state &st) const
    {
        const unsigned next = (group + 1u) % Config::order_groups;
        if (Config::order_arrive == 1) {
            __syncwarp();
            if ((threadIdx.x & 31u) != 0u) return;
        }
#ifdef CUASYNC_WATCHDOG
        atomicAdd(pipeline<Config>::progress() + Config::order_progress + (unsigned)st.index * Config::order_groups + next, 1u);
#endif
        mbarrier::arrive(barrier((unsigned)st.index, next));
    }
};

} // namespace cuasync
