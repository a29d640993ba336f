// cuasync/turnstile.cuh — a flag per split tile in global memory that lets the k-ranges of a tile
// add their partials one after another, in k order (stream-K and serial split-K: scheduler.cuh
// says which unit waits and which publishes, and the tile's slot: its flag, flags[slot], and its
// f32 partial in the workspace). The flag holds tag(epoch, count): the launch's epoch (a kernel
// argument, sched:next_epoch() on the host) and the k-tiles already in the tile's partial. A unit
// that starts at k-tile b waits until it reads tag(epoch, b) (acquire), adds the partial to its
// own, and either writes the sum back and stores tag(epoch, k_end) (release), or writes the output
// and stores 0. A flag left by an aborted launch (the watchdog's exit keeps the context usable)
// carries an older epoch and is never taken for this launch's; every flag is 0 again after a
// launch that completes. Two launches that share flags and workspace must not overlap (one
// stream, or ordered by events): give concurrent launches their own. Each wait goes through
// watchdog::spin_until with a site (role turnstile::ROLE, stage = the tile, iteration = the tag
// awaited), so that a hang names them.
// Two forms: block_* (every thread of the block calls it: __syncthreads, thread (0,0,0) leads)
// and group_* (the threads of a turnstile::group call it: a named barrier and a leader; for a
// warp-specialized kernel whose producer warps never reach the fix-up).
// Compiled by NVRTC with no host headers.
#pragma once

#include <cuasync/scheduler.cuh>
#include <cuasync/watchdog.cuh>

namespace cuasync {
namespace turnstile {

// The watchdog site's role for a turnstile wait (lua/cuasync/hang.lua's TURNSTILE names it; 3 is
// the ordered barrier's). A trace event keeps 2 bits of a role (trace.cuh's where()): 4 does not
// fit, and is not meant to. The turnstile's wait is not on the timeline: wait_eq's site is
// CUASYNC_TRACE_OFF, and the watchdog's record of a wait it ended (trace::detail::left) skips a
// role past 3.
constexpr unsigned ROLE = 4u;

// A flag: epoch << COUNT_BITS | count (lua/cuasync/model/tile_scheduler.lua's tag, the same).
constexpr unsigned COUNT_BITS = 20u;
constexpr unsigned COUNT_MASK = (1u << COUNT_BITS) - 1u;

// The flag's value for `count` k-tiles in launch `epoch` (1..4095: sched:next_epoch()).
__device__ __forceinline__ unsigned tag(unsigned epoch, unsigned count)
{
    return (epoch << COUNT_BITS) | (count & COUNT_MASK);
}

// A group of a block's threads that does the fix-up alone (a warp-specialized kernel's consumer
// warps): named barrier `id` (1..15: 0 is __syncthreads'; one the kernel uses for nothing else at
// the same time) for `threads` threads (whole warps: a multiple of 32, every thread of each of its
// warps), and one leader among them (leader true in exactly one thread) that spins and stores.
// Every thread of the group calls each group_* function with the same group; no other does.
struct group {
    unsigned id;
    unsigned threads;
    bool leader;
};

// ld.acquire.gpu.global.u32 v, [p];                                    // PTX ISA 6.0, sm_70
// The flag, with acquire: what its writer released before storing it is visible after.
__device__ __forceinline__ unsigned load_acquire(const unsigned *p)
{
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

// fence.acq_rel.gpu;                                                   // PTX ISA 6.0, sm_70
// Orders this thread's earlier accesses (and, after a bar.sync, its block's) before its later
// ones at GPU scope: with a relaxed store after it, a release.
__device__ __forceinline__ void fence_acq_rel()
{
    asm volatile("fence.acq_rel.gpu;" ::: "memory");
}

// st.relaxed.gpu.global.u32 [p], v;                                    // PTX ISA 6.0, sm_70
__device__ __forceinline__ void store_relaxed(unsigned *p, unsigned v)
{
    asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
}

// bar.sync id, threads;                                                // PTX ISA 2.0, sm_20
// The group's threads wait for each other on named barrier `id` (1..15), `threads` of them (a
// multiple of 32); like __syncthreads, it orders their shared and global accesses at CTA scope.
__device__ __forceinline__ void bar_sync(unsigned id, unsigned threads)
{
    asm volatile("bar.sync %0, %1;" :: "r"(id), "r"(threads) : "memory");
}

// This thread spins until *flag == value (acquire), bounded by the watchdog; tile names the site.
__device__ __forceinline__ void wait_eq(const unsigned *flag, unsigned tile, unsigned value)
{
    watchdog::site s{ 0u, 0xFFFFFFFFu, 0u, tile, ROLE, value, 0u, 0u };
#ifdef CUASYNC_TRACE
    s.trace_ring = CUASYNC_TRACE_OFF;   // not on the timeline (ROLE says why)
#endif
    watchdog::spin_until([&] { return load_acquire(flag) == value; }, s);
}

namespace detail {
// Thread (0,0,0): the block forms' leader.
__device__ __forceinline__ bool block_leader() { return threadIdx.x == 0u && threadIdx.y == 0u && threadIdx.z == 0u; }
} // namespace detail

// Every thread of the block: wait until t's partial holds this launch's k-tiles before t.k_begin.
// Thread 0 spins, then the block syncs (the others' reads of the partial come after its acquire).
__device__ __forceinline__ void block_wait(const unsigned *flags, unsigned epoch, const scheduler::work &t)
{
    if (detail::block_leader()) wait_eq(flags + t.slot, t.tile, tag(epoch, t.k_begin));
    __syncthreads();
}

// Every thread of the block, once its part of t's partial is written: the block syncs, then thread
// 0 fences and stores tag(epoch, t.k_end) (a release of every thread's writes to the partial).
__device__ __forceinline__ void block_publish(unsigned *flags, unsigned epoch, const scheduler::work &t)
{
    __syncthreads();
    if (detail::block_leader()) {
        fence_acq_rel();
        store_relaxed(flags + t.slot, tag(epoch, t.k_end));
    }
}

// Every thread of the block, after its last read of t's partial (t wrote the output): the flag
// goes back to 0. Nobody waits on it again in this launch.
__device__ __forceinline__ void block_reset(unsigned *flags, const scheduler::work &t)
{
    __syncthreads();
    if (detail::block_leader()) store_relaxed(flags + t.slot, 0u);
}

// block_wait for the threads of g only: the leader spins, then g's named barrier.
__device__ __forceinline__ void group_wait(const unsigned *flags, unsigned epoch, const scheduler::work &t, const group &g)
{
    if (g.leader) wait_eq(flags + t.slot, t.tile, tag(epoch, t.k_begin));
    bar_sync(g.id, g.threads);
}

// block_publish for the threads of g only: g's named barrier, then the leader fences and stores.
__device__ __forceinline__ void group_publish(unsigned *flags, unsigned epoch, const scheduler::work &t, const group &g)
{
    bar_sync(g.id, g.threads);
    if (g.leader) {
        fence_acq_rel();
        store_relaxed(flags + t.slot, tag(epoch, t.k_end));
    }
}

// block_reset for the threads of g only.
__device__ __forceinline__ void group_reset(unsigned *flags, const scheduler::work &t, const group &g)
{
    bar_sync(g.id, g.threads);
    if (g.leader) store_relaxed(flags + t.slot, 0u);
}

} // namespace turnstile
} // namespace cuasync
