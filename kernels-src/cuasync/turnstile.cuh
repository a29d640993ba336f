// cuasync/turnstile.cuh — a flag per tile in global memory that lets the k-ranges of a tile add
// their partials one after another, in k order (stream-K and serial split-K: scheduler.cuh says
// which unit waits and which publishes). The flag counts the k-tiles already in the tile's
// partial: a unit that starts at k-tile b waits until it reads b (acquire), adds the partial to
// its own, and either writes the sum back and stores its k_end (release), or writes the output
// and stores 0, so that the next launch finds every flag as the first did (zero them once, when
// the workspace is made). Each wait goes through watchdog::spin_until with a site (role
// turnstile::ROLE, stage = the tile, iteration = the count awaited), so that a hang names them.
// Compiled by NVRTC with no host headers.
#pragma once

#include <cuasync/watchdog.cuh>

namespace cuasync {
namespace turnstile {

// The watchdog site's role for a turnstile wait (lua/cuasync/hang.lua's TURNSTILE names it; 3 is
// the ordered barrier's). A trace event keeps 2 bits of a role (trace.cuh's where()): 4 does not
// fit, and is not meant to. The turnstile's wait is not on the timeline: wait_eq's site is
// CUASYNC_TRACE_OFF, and the watchdog's record of a wait it ended (trace::detail::left) skips a
// role past 3.
constexpr unsigned ROLE = 4u;

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

// This thread spins until flags[tile] == value (acquire), bounded by the watchdog.
__device__ __forceinline__ void wait_eq(const unsigned *flags, unsigned tile, unsigned value)
{
    watchdog::site s{ 0u, 0xFFFFFFFFu, 0u, tile, ROLE, value, 0u, 0u };
#ifdef CUASYNC_TRACE
    s.trace_ring = CUASYNC_TRACE_OFF;   // the timeline has no row for it (yet)
#endif
    watchdog::spin_until([&] { return load_acquire(flags + tile) == value; }, s);
}

// The block waits until tile's partial holds the k-tiles before k_begin: thread 0 spins, then
// the block syncs (its other threads' reads of the partial come after thread 0's acquire).
__device__ __forceinline__ void block_wait(const unsigned *flags, unsigned tile, unsigned k_begin)
{
    if (threadIdx.x == 0u && threadIdx.y == 0u && threadIdx.z == 0u) wait_eq(flags, tile, k_begin);
    __syncthreads();
}

// The block has written tile's partial through k_end: it syncs, then thread 0 fences and stores
// the count (a release of every thread's writes to the partial).
__device__ __forceinline__ void block_publish(unsigned *flags, unsigned tile, unsigned k_end)
{
    __syncthreads();
    if (threadIdx.x == 0u && threadIdx.y == 0u && threadIdx.z == 0u) {
        fence_acq_rel();
        store_relaxed(flags + tile, k_end);
    }
}

// The block has read tile's partial for the last time (its output is its own): the flag goes
// back to 0 for the next launch. Nobody waits on it again in this one.
__device__ __forceinline__ void block_reset(unsigned *flags, unsigned tile)
{
    __syncthreads();
    if (threadIdx.x == 0u && threadIdx.y == 0u && threadIdx.z == 0u) store_relaxed(flags + tile, 0u);
}

} // namespace turnstile
} // namespace cuasync
