// cuasync/trace.cuh — the timeline: every sited wait (begin and end), copy issue, arm and release
// of a pipeline, and the user's marks, recorded per warp into rings in device memory, with
// %globaltimer. With CUASYNC_TRACE (cuasync.program{ trace = ... } defines it, with
// CUASYNC_TRACE_EVENTS, the ring's size, and CUASYNC_TRACE_STRIDE or CUASYNC_TRACE_LIST, the
// blocks traced); without it every function here is empty and a kernel's PTX is what it was.
// The host (lua/cuasync/trace/init.lua) sets cuasync_trace_buf before each launch and reads it
// back after a synchronize.
//   buffer: header (32 bytes) | slot headers (16 bytes each) | events (16 bytes each, cap per slot)
//   a slot is one warp of one traced block; its ring keeps the newest cap events (count says
//   how many were written: count - cap were lost, never a hang or a torn record).
// An event: t (%globaltimer, ns), a = where (bits 0-17: the barrier's shared address, or its
// offset in the pipeline's ring when bit 18 is set; bit 19: parity; bits 24-27: kind; bits
// 28-29: role), b = the iteration, or a mark's id, or the SM.
#pragma once

#include <cuasync/arch.cuh>

namespace cuasync {
namespace trace {

enum kind : unsigned {
    wait_begin = 1, wait_end = 2, issue = 3, arm = 4, release = 5, mark_at = 6,
    range_begin = 7, range_end = 8, block_begin = 9,
};

#ifdef CUASYNC_TRACE
#ifndef CUASYNC_TRACE_EVENTS
#define CUASYNC_TRACE_EVENTS 1024
#endif

struct header {            // lua/cuasync/trace/init.lua declares the same layout
    unsigned magic;        // 'CUTR'
    unsigned slots;        // slots the host made room for (a slot past them is dropped, counted)
    unsigned cap;          // events per slot (CUASYNC_TRACE_EVENTS)
    unsigned dropped;      // events of slots past `slots`
    unsigned pad_[4];
};
struct slot { unsigned count, sm, block, rank; };
struct event { unsigned long long t; unsigned a, b; };

// mov.u64 t, %globaltimer;                                            // PTX ISA 3.1, sm_30
__device__ __forceinline__ unsigned long long clock_ns()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// The traced ordinal of this block, or -1: every CUASYNC_TRACE_STRIDE-th block (1: all), or the
// blocks of CUASYNC_TRACE_LIST (linear indices, x fastest).
__device__ __forceinline__ int ordinal()
{
    const unsigned linear = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
#ifdef CUASYNC_TRACE_LIST
    const unsigned list[] = { CUASYNC_TRACE_LIST };
    for (unsigned i = 0; i < sizeof(list) / sizeof(list[0]); ++i)
        if (list[i] == linear) return (int)i;
    return -1;
#else
#ifndef CUASYNC_TRACE_STRIDE
#define CUASYNC_TRACE_STRIDE 8
#endif
    return linear % (unsigned)(CUASYNC_TRACE_STRIDE) == 0u ? (int)(linear / (unsigned)(CUASYNC_TRACE_STRIDE)) : -1;
#endif
}

} // namespace trace
} // namespace cuasync

extern "C" {
__device__ unsigned char *cuasync_trace_buf;   // set by the host before each launch
}

namespace cuasync {
namespace trace {

// mov.u32 r, %laneid;                                                  // PTX ISA 1.3, sm_10
// mov.u32 r, %cluster_ctarank;                                         // PTX ISA 7.8, sm_90
// Record one event: by the lowest active lane of the warp (one record a warp, whoever waits).
__device__ __noinline__ void put(unsigned a, unsigned b)
{
    unsigned char *buf = cuasync_trace_buf;
    const int ord = ordinal();
    if (buf == nullptr || ord < 0) return;
    unsigned lane;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
    if ((unsigned)(__ffs(__activemask()) - 1) != lane) return;
    const unsigned long long t = clock_ns();
    header *h = reinterpret_cast<header *>(buf);
    const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
    const unsigned warp = (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) / 32u;
    const unsigned s = (unsigned)ord * ((threads + 31u) / 32u) + warp;
    if (s >= h->slots) { atomicAdd(&h->dropped, 1u); return; }
    slot *sl = reinterpret_cast<slot *>(buf + sizeof(header)) + s;
    const unsigned i = atomicAdd(&sl->count, 1u);
    if (i == 0u) {
        unsigned rank = 0;
#if __CUDA_ARCH__ >= 900
        asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
#endif
        sl->sm = sm_id();
        sl->block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
        sl->rank = rank;
    }
    event *e = reinterpret_cast<event *>(buf + sizeof(header) + sizeof(slot) * h->slots) +
               (unsigned long long)s * (unsigned)(CUASYNC_TRACE_EVENTS) + i % (unsigned)(CUASYNC_TRACE_EVENTS);
    e->t = t;
    e->a = a;
    e->b = b;
}

// Where an event is: the barrier (its offset in the pipeline's ring when base is known), the
// parity waited for, the event's kind and the role.
__device__ __forceinline__ unsigned where(unsigned k, unsigned bar, unsigned base, unsigned parity, unsigned role)
{
    const unsigned addr = base != 0u && bar >= base ? ((bar - base) & 0x3FFFFu) | (1u << 18) : (bar & 0x3FFFFu);
    return addr | ((parity & 1u) << 19) | ((k & 15u) << 24) | ((role & 3u) << 28);
}

__device__ __forceinline__ void event_at(unsigned k, unsigned bar, unsigned base, unsigned parity, unsigned role,
                                         unsigned b)
{
    put(where(k, bar, base, parity, role), b);
}

// A user's mark: an instant with an id (names are the host's: trace = { names = {...} }).
__device__ __forceinline__ void mark(unsigned id) { put(where(mark_at, 0u, 0u, 0u, 0u), id); }
__device__ __forceinline__ void range_open(unsigned id) { put(where(range_begin, 0u, 0u, 0u, 0u), id); }
__device__ __forceinline__ void range_close(unsigned id) { put(where(range_end, 0u, 0u, 0u, 0u), id); }
// The block's start on its SM (pipeline::init records it).
__device__ __forceinline__ void begin_block() { put(where(block_begin, 0u, 0u, 0u, 0u), sm_id()); }

#else // no CUASYNC_TRACE: nothing is recorded, and nothing is compiled

__device__ __forceinline__ void event_at(unsigned, unsigned, unsigned, unsigned, unsigned, unsigned) {}
__device__ __forceinline__ void mark(unsigned) {}
__device__ __forceinline__ void range_open(unsigned) {}
__device__ __forceinline__ void range_close(unsigned) {}
__device__ __forceinline__ void begin_block() {}

#endif // CUASYNC_TRACE

// A range over a scope: trace::range r(1); ... (its end recorded when r leaves the scope).
struct range {
    unsigned id;
    __device__ explicit range(unsigned i) : id(i) { range_open(i); }
    __device__ ~range() { range_close(id); }
};

} // namespace trace
} // namespace cuasync
