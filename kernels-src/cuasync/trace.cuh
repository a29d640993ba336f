// cuasync/trace.cuh — the timeline: every sited wait (its start and how long it waited), a
// pipeline's copy issue and release, the block's start, and the user's marks and ranges,
// recorded per warp into rings in device memory, with %globaltimer. With CUASYNC_TRACE
// (cuasync.program{ trace = ... } defines it, with CUASYNC_TRACE_EVENTS, the ring's size, and
// CUASYNC_TRACE_STRIDE or CUASYNC_TRACE_LIST, the blocks traced); without it every function here
// is empty and a kernel's PTX is what it was. The host (lua/cuasync/trace/) sets
// cuasync_trace (in constant memory: the buffer, its slots, the launch's epoch) before each
// launch and reads the buffer back after a synchronize.
//   buffer: header (32 bytes) | slot headers (16 bytes each) | events (32 bytes each)
//   a slot is one warp of one traced block, with three rings of cap events: 0 the warp's own
//   (plain waits, marks, ranges: placed by a counter), 1 its producer's and 2 its consumer's
//   pipeline events, placed by the iteration (event 2 it is the wait, 2 it + 1 the issue or the
//   release): no atomic on a pipeline's path (a per-event atomicAdd made a 1 GiB copy 2.4x
//   slower). A pipeline's events are held in registers and stored, by lane 0 of the warp,
//   where the thread has slack (held, below): a role's calls must be reached by lane 0 of each
//   of its warps, as every plan kernel does. Each event carries the launch's epoch, so a ring
//   needs no clearing: an event of another launch is not read.
// Time: a pipeline's events are stamped with %clock64 (the SM's cycles: cheap), ring 0's with
// %globaltimer (ns, the same on every SM) and %clock64 both; every 64th iteration a role adds a
// sync to ring 0, and the host maps a slot's cycles to ns between its pairs.
// An event: t (ns, or cycles where bit 30 of a says so), dur (a wait's length, in t's unit),
// a = where (bits 0-17: the barrier's shared address, or its offset in the pipeline's ring when
// bit 18 is set; bit 19: parity; bits 24-27: kind; bits 28-29: role; bit 30: t in cycles),
// b = the iteration, or a mark's id, or the SM; the epoch; aux = %clock64 at t (ring 0; 0 for a scoped range's open: no clock pair).
#pragma once

#include <cuasync/arch.cuh>

namespace cuasync {
namespace trace {

enum kind : unsigned {
    wait = 1, issue = 3, arm = 4, release = 5, mark_at = 6, range_begin = 7, range_end = 8, block_begin = 9, sync = 10,
};

#ifdef CUASYNC_TRACE
#ifndef CUASYNC_TRACE_EVENTS
#define CUASYNC_TRACE_EVENTS 1024
#endif

struct header {            // lua/cuasync/trace/layout.lua declares the same layout
    unsigned magic;        // 'CUTR'
    unsigned slots;        // slots the host made room for (a slot past them is dropped, counted)
    unsigned cap;          // events per ring (CUASYNC_TRACE_EVENTS)
    unsigned dropped;      // events of slots past `slots`
    unsigned epoch;        // not written (0): each event carries its launch's epoch (params)
    unsigned pad_[3];
};
struct slot { unsigned count, sm, block, rank; };   // count: ring 0's events
struct __align__(16) event { unsigned long long t; unsigned dur, a, b, epoch; unsigned long long aux; };
// What each record reads, from the constant cache (a global load there cost every wait in
// every block, traced or not: 9% of a GEMM).
struct params { unsigned char *buf; unsigned slots, epoch; };

// mov.u64 t, %globaltimer;                                            // PTX ISA 3.1, sm_30
__device__ __forceinline__ unsigned long long clock_ns()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// mov.u64 t, %clock64;                                                // PTX ISA 2.0, sm_20
__device__ __forceinline__ unsigned long long cycles()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(t));
    return t;
}

namespace detail {   // the recording's own: not part of the interface

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

} // namespace detail
} // namespace trace
} // namespace cuasync

extern "C" {
__constant__ cuasync::trace::params cuasync_trace;   // set by the host before each launch
}

namespace cuasync {
namespace trace {

namespace detail {

// mov.u32 r, %laneid;                                                  // PTX ISA 1.3, sm_10
// Where this warp's events go, or nullptr: a traced block, the warp's lowest active lane (one
// record a warp, whoever waits). *sl: its slot header. (Its slot arithmetic is slot_of's, below,
// written out: with the lane test between the block's and the slot's, as here, every traced
// kernel's PTX stays what it is; through slot_of it changed.)
__device__ __forceinline__ event *ring(unsigned r, slot **sl, header **hp)
{
    unsigned char *buf = cuasync_trace.buf;
    const int ord = ordinal();
    if (buf == nullptr || ord < 0) return nullptr;
    unsigned lane;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
    if ((unsigned)(__ffs(__activemask()) - 1) != lane) return nullptr;
    header *h = reinterpret_cast<header *>(buf);
    const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
    const unsigned warp = (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) / 32u;
    const unsigned s = (unsigned)ord * ((threads + 31u) / 32u) + warp;
    if (s >= cuasync_trace.slots) { atomicAdd(&h->dropped, 1u); return nullptr; }
    *sl = reinterpret_cast<slot *>(buf + sizeof(header)) + s;
    *hp = h;
    return reinterpret_cast<event *>(buf + sizeof(header) + sizeof(slot) * cuasync_trace.slots) +
           ((unsigned long long)s * 3u + r) * (unsigned)(CUASYNC_TRACE_EVENTS);
}

// A site's ring once it was looked up for a block that is not traced (nullptr: not looked up).
#define CUASYNC_TRACE_OFF (reinterpret_cast<cuasync::trace::event *>(1))

// This warp's slot in a traced block (s); false where the block is not traced (past false) or the
// slot is past the buffer's (past true: its events are dropped). ring_of and ring0_of share it.
__device__ __forceinline__ bool slot_of(unsigned &s, bool &past)
{
    past = false;
    const int ord = ordinal();
    if (cuasync_trace.buf == nullptr || ord < 0) return false;
    const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
    const unsigned warp = (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) / 32u;
    s = (unsigned)ord * ((threads + 31u) / 32u) + warp;
    if (s >= cuasync_trace.slots) { past = true; return false; }
    return true;
}

// This warp's ring r (1 producer, 2 consumer) in a traced block, or CUASYNC_TRACE_OFF: found
// once, when a pipeline is made.
__device__ __forceinline__ event *ring_of(unsigned r)
{
    unsigned s;
    bool past;
    if (!slot_of(s, past)) return CUASYNC_TRACE_OFF;
    return reinterpret_cast<event *>(cuasync_trace.buf + sizeof(header) + sizeof(slot) * cuasync_trace.slots) +
           ((unsigned long long)s * 3u + r) * (unsigned)(CUASYNC_TRACE_EVENTS);
}

__device__ __forceinline__ void store(event *e, unsigned long long t, unsigned dur, unsigned a, unsigned b, unsigned epoch,
                                      unsigned long long aux)
{
    // two 16-byte stores, fire and forget
    ulonglong2 *v = reinterpret_cast<ulonglong2 *>(e);
    v[0] = make_ulonglong2(t, (unsigned long long)dur | ((unsigned long long)a << 32));
    v[1] = make_ulonglong2((unsigned long long)b | ((unsigned long long)epoch << 32), aux);
}

// mov.u32 r, %cluster_ctarank;                                         // PTX ISA 7.8, sm_90
// A slot's header, written with its first event: the SM, the block, its rank in the cluster.
__device__ __forceinline__ void name_slot(slot *sl)
{
    unsigned rank = 0;
#if __CUDA_ARCH__ >= 900
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
#endif
    sl->sm = sm_id();
    sl->block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    sl->rank = rank;
}

// Ring 0: the warp's own events, placed by its slot's counter (the first names the block),
// stamped with both clocks.
__device__ __forceinline__ void put_at(unsigned long long t, unsigned dur, unsigned a, unsigned b)
{
    slot *sl; header *h;
    event *e = ring(0u, &sl, &h);
    if (e == nullptr) return;
    const unsigned i = atomicAdd(&sl->count, 1u);
    if (i == 0u) name_slot(sl);
    const unsigned long long c = cycles();
    store(e + i % (unsigned)(CUASYNC_TRACE_EVENTS), t != 0ull ? t : clock_ns(), dur, a, b, cuasync_trace.epoch, c);
}
__device__ __forceinline__ void put(unsigned dur, unsigned a, unsigned b) { put_at(0ull, dur, a, b); }

// Where an event is: the barrier (its offset in the pipeline's ring when base is known), the
// parity waited for, the event's kind and the role.
__device__ __forceinline__ unsigned where(unsigned k, unsigned bar, unsigned base, unsigned parity, unsigned role)
{
    const unsigned addr = base != 0u && bar >= base ? ((bar - base) & 0x3FFFFu) | (1u << 18) : (bar & 0x3FFFFu);
    return addr | ((parity & 1u) << 19) | ((k & 15u) << 24) | ((role & 3u) << 28);
}

// A pipeline role's event (role 1 producer, 2 consumer; a pipeline's base known): at 2 it + k of
// the role's ring (k = 0 the wait, 1 the issue or release), t and dur in cycles, and every 64th
// iteration's wait a sync in ring 0; a plain barrier's (no role) in ring 0, dur in cycles too.
__device__ __forceinline__ void at(unsigned k, unsigned bar, unsigned base, unsigned parity, unsigned role,
                                   unsigned it, unsigned long long t, unsigned dur)
{
    const unsigned a = where(k, bar, base, parity, role) | (1u << 30);
    if (role == 0u || base == 0u) { put(dur, a, it); return; }
    slot *sl; header *h;
    event *e = ring(role, &sl, &h);
    if (e == nullptr) return;
    const bool w = k == (unsigned)wait;
    store(e + (2u * it + (w ? 0u : 1u)) % (unsigned)(CUASYNC_TRACE_EVENTS), t, dur, a, it, cuasync_trace.epoch, 0ull);
    if (w && (it & 63u) == 0u) put(0u, where(sync, 0u, 0u, 0u, role), it);
}

// mov.u32 r, %laneid;                                                  // PTX ISA 1.3, sm_10
// This thread's lane in its warp.
__device__ __forceinline__ unsigned lane()
{
    unsigned l;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(l));
    return l;
}

// A pipeline role's records, held in registers from the moment they happen until the thread
// has slack: its last wait ([0], from t[0] to t_end) and its last issue or release ([1], at
// t[1]); sp: the stage's index, its phase << 16, and bit 31 when held. Taken with a clock read
// and a few moves, without a branch, in every block (an untraced one never stores them): a
// test and branch at each event, the record's arithmetic and its stores sat between an MMA
// group's wait and the next group's issue and starved a traced GEMM block's tensor cores
// (Nsight Compute, docs/timeline.md). pipeline.cuh's store_held makes the events of them.
struct held {
    unsigned long long t[2], t_end;
    unsigned it[2], sp[2];
};

// A pipeline event's where (trace.cuh's layout): off, the barrier's offset in the stage ring.
__device__ __forceinline__ unsigned pipe_where(unsigned k, unsigned off, unsigned parity, unsigned role)
{
    return (off & 0x3FFFFu) | (1u << 18) | ((parity & 1u) << 19) | ((k & 15u) << 24) | ((role & 3u) << 28) | (1u << 30);
}

// @p st.global.v2.u64 [e], {..};                                     // PTX ISA 2.0, sm_20
// An event's two 16-byte stores, predicated (no branch): e a global address.
__device__ __forceinline__ void store_if(bool p, unsigned long long e, unsigned long long t, unsigned dur, unsigned a,
                                         unsigned b, unsigned epoch)
{
    asm volatile("{\n\t.reg .pred q;\n\tsetp.ne.u32 q, %0, 0;\n\t"
                 "@q st.global.v2.u64 [%1], {%2, %3};\n\t@q st.global.v2.u64 [%1+16], {%4, %5};\n\t}"
                 :: "r"((unsigned)p), "l"(e), "l"(t), "l"((unsigned long long)dur | ((unsigned long long)a << 32)),
                    "l"((unsigned long long)b | ((unsigned long long)epoch << 32)), "l"(0ull));
}

// Event i of a held pair into ring rg (its global address; 0: an untraced block, nothing
// stored) by the thread `one` says: event 2 it + i of the ring.
__device__ __forceinline__ void store_held_event(unsigned long long rg, bool one, const held &h, unsigned i, unsigned dur,
                                                 unsigned a)
{
    const unsigned long long e = rg + (unsigned long long)((2u * h.it[i] + i) % (unsigned)(CUASYNC_TRACE_EVENTS)) * sizeof(event);
    store_if(one && rg != 0ull && (h.sp[i] >> 31) != 0u, e, h.t[i], dur, a, h.it[i], cuasync_trace.epoch);
}

// An instant of a pipeline (issue, release) or of a barrier.
__device__ __forceinline__ void event_at(unsigned k, unsigned bar, unsigned base, unsigned parity, unsigned role,
                                         unsigned b)
{
    at(k, bar, base, parity, role, b, cycles(), 0u);
}

// Whether this thread records (for spin_until: the clock is read only where it does).
__device__ __forceinline__ bool recording()
{
    return cuasync_trace.buf != nullptr && ordinal() >= 0;
}

// The largest role an event keeps (where(): 2 bits). A wait of a larger role (the turnstile's 4,
// turnstile.cuh) is not on the timeline: waited and left record nothing for it.
constexpr unsigned max_role = 3u;

// A wait that began at t0 (cycles()) and has just ended.
__device__ __forceinline__ void waited(unsigned bar, unsigned base, unsigned parity, unsigned role, unsigned it,
                                       unsigned long long t0)
{
    if (role > max_role) return;
    const unsigned long long d = cycles() - t0;
    at(wait, bar, base, parity, role, it, t0, d > 0xFFFFFFFEull ? 0xFFFFFFFEu : (unsigned)d);   // all ones: never ended
}

// A wait the watchdog ended (it never saw its phase complete), begun at t0_ns (%globaltimer):
// in ring 0, its length all ones.
__device__ __forceinline__ void left(unsigned bar, unsigned base, unsigned parity, unsigned role, unsigned it,
                                     unsigned long long t0_ns)
{
    if (role > max_role) return;
    if ((bar != 0u || role != 0u) && recording()) put_at(t0_ns, 0xFFFFFFFFu, where(wait, bar, base, parity, role), it);
}

} // namespace detail

// A user's mark: an instant with an id (names are the host's: trace = { names = {...} }).
__device__ __forceinline__ void mark(unsigned id) { detail::put(0u, detail::where(mark_at, 0u, 0u, 0u, 0u), id); }
__device__ __forceinline__ void range_open(unsigned id) { detail::put(0u, detail::where(range_begin, 0u, 0u, 0u, 0u), id); }
__device__ __forceinline__ void range_close(unsigned id) { detail::put(0u, detail::where(range_end, 0u, 0u, 0u, 0u), id); }
namespace detail {
// The block's start on its SM (pipeline::init records it).
__device__ __forceinline__ void begin_block() { put(0u, where(block_begin, 0u, 0u, 0u, 0u), sm_id()); }
} // namespace detail

#else // no CUASYNC_TRACE: nothing is recorded, and nothing is compiled

namespace detail {
__device__ __forceinline__ void event_at(unsigned, unsigned, unsigned, unsigned, unsigned, unsigned) {}
__device__ __forceinline__ void begin_block() {}
} // namespace detail
__device__ __forceinline__ void mark(unsigned) {}
__device__ __forceinline__ void range_open(unsigned) {}
__device__ __forceinline__ void range_close(unsigned) {}

#endif // CUASYNC_TRACE

// A range over a scope: trace::range r(1); ... (its end recorded when r leaves the scope).
#ifdef CUASYNC_TRACE
namespace detail {
// Ring 0 of this warp's slot for a scoped range, without ring()'s lowest-lane test: the thread
// that took the reservation stores it, whatever lanes are active then. *sl: the slot; nullptr
// for a block not traced or a slot past the buffer's (past = true: its events are dropped).
__device__ __forceinline__ event *ring0_of(slot **sl, bool *past)
{
    unsigned s;
    if (!slot_of(s, *past)) return nullptr;
    *sl = reinterpret_cast<slot *>(cuasync_trace.buf + sizeof(header)) + s;
    return reinterpret_cast<event *>(cuasync_trace.buf + sizeof(header) + sizeof(slot) * cuasync_trace.slots) +
           (unsigned long long)s * 3u * (unsigned)(CUASYNC_TRACE_EVENTS);
}
} // namespace detail

// One atomic for both events, whose answer is needed only when the scope ends: the open's time
// is held in registers (its %globaltimer's low word: a range under 4 s) and both events are
// stored at the close, by the thread that opened it (the warp's lowest active lane then).
// range_open and range_close each wait for their own atomic's answer (a round trip to L2)
// before the warp goes on: in a GEMM's epilogue, twice a tile, that wait was on the critical
// path. The open carries no clock pair (aux 0); the close does. A scope that never closes (a
// hang, the watchdog's exit inside it) records neither event: range_open shows in a hang's
// post-mortem, a scope does not. Ring 0 events recorded inside an open scope count toward the
// ring's size: past it, the close overwrites newer ones.
struct range {
    unsigned id, at, t0;           // at: the open's place in ring 0 (~0u: not recorded here); t0: its ns, low word
    __device__ explicit range(unsigned i)
    {
        id = i;
        at = ~0u;
        t0 = 0u;
        if ((unsigned)(__ffs(__activemask()) - 1) != detail::lane()) return;
        slot *sl;
        bool past;
        if (detail::ring0_of(&sl, &past) == nullptr) {
            if (past) atomicAdd(&reinterpret_cast<header *>(cuasync_trace.buf)->dropped, 2u);
            return;
        }
        at = atomicAdd(&sl->count, 2u);
        t0 = (unsigned)clock_ns();
    }
    __device__ ~range()
    {
        if (at == ~0u) return;
        slot *sl;
        bool past;
        event *e = detail::ring0_of(&sl, &past);
        const unsigned long long c1 = cycles(), t1 = clock_ns();
        if (at == 0u) detail::name_slot(sl);
        const unsigned epoch = cuasync_trace.epoch;
        detail::store(e + at % (unsigned)(CUASYNC_TRACE_EVENTS), t1 - (unsigned)((unsigned)t1 - t0), 0u,
                      detail::where(range_begin, 0u, 0u, 0u, 0u), id, epoch, 0ull);
        detail::store(e + (at + 1u) % (unsigned)(CUASYNC_TRACE_EVENTS), t1, 0u, detail::where(range_end, 0u, 0u, 0u, 0u), id, epoch, c1);
    }
};
#else
struct range {   // nothing to hold: a kernel's PTX is what it was without trace
    __device__ explicit range(unsigned i) { (void)i; }
    __device__ ~range() {}
};
#endif

} // namespace trace
} // namespace cuasync
