// cuasync/pipeline.cuh — the pipeline of a cuasync.pipeline plan: pipeline<Config>, built from
// the plan's generated Config (<cuasync/pipelines/NAME.cuh>): stage buffers and pairs of
// mbarriers, full[s] (the stage holds data) and empty[s] (the stage may be refilled), carved out
// of dynamic shared memory at the plan's offsets, full armed with Config::tx_bytes; no byte
// count in the kernel.
//   producer: acquire (wait empty) -> fill -> commit (arrive on full, or let the copy complete it)
//   consumer: wait (wait full) -> use -> release (arrive on empty, in this block and its peers)
// Each side walks the ring with a stage_state (ring.cuh, which also has pipeline_ring<N>, the
// same ring written by hand; included here). Unified form: every thread produces and consumes
// (producers == consumers == block size). Partitioned form: producer warps and consumer warps.
// The parts: pipeline_stages<Config>, the stage buffers and barriers (the one state); over it,
// one class per completion kind, how a stage fills and its full barrier completes:
// pipeline_tx_bytes (TMA/bulk loads, here), pipeline_cp_async_mbarrier and pipeline_cp_async_group
// (pipeline_cp_async.cuh, included here); and pipeline<Config>, derived from the kind its
// Config::completion names: roles, init, acquire and release, the watchdog's progress words.
#pragma once

#include <cuasync/mbarrier.cuh>
#include <cuasync/cp_async.cuh>
#include <cuasync/bulk.cuh>
#include <cuasync/cluster.cuh>             // the plan's peers
#include <cuasync/ring.cuh>                // stage_state; pipeline_ring for those who include this header
#include <cuasync/pipeline_cp_async.cuh>   // completions "mbarrier" and "group"
#include <cuasync/order.cuh>               // a plan's ordered barrier (order = {...}), initialized by init()

namespace cuasync {

template <class Config> struct pipeline;   // below: the kinds reach its progress words

// The block's dynamic shared memory from its first Align-aligned byte (the base is only 16-byte
// aligned by contract: a plan's or a layout's smem_bytes include Align - 16 bytes of slack).
template <unsigned Align>
__device__ __forceinline__ unsigned char *dynamic_smem()
{
    static_assert((Align & (Align - 1u)) == 0, "cuasync: alignment must be a power of two");
    extern __shared__ unsigned char cuasync_pipeline_smem_[];
    const unsigned addr = smem_addr(cuasync_pipeline_smem_);
    return cuasync_pipeline_smem_ + (((addr + Align - 1u) & ~(Align - 1u)) - addr);
}

// The stages of a plan: its stage buffers and barriers, carved out of dynamic shared memory. The
// one state every completion kind (and so pipeline<Config>) is built over.
template <class Config>
struct pipeline_stages {
    static_assert(Config::stages >= 1 && Config::stages <= 64, "cuasync: a pipeline has 1..64 stages");
    static_assert((Config::align & (Config::align - 1)) == 0, "cuasync: stage alignment must be a power of two");
    static_assert(Config::full_offset % 8 == 0 && Config::empty_offset % 8 == 0, "cuasync: mbarriers are 8-byte aligned");
    typedef stage_state<Config::stages> state;

    unsigned char *base;   // the dynamic shared memory, rounded up to Config::align
#ifdef CUASYNC_TRACE
    unsigned long long trace_rings[2];      // this warp's producer and consumer rings, global addresses (0: not traced)
    bool trace_one;                          // whether this thread stores its warp's records (lane 0)
    mutable trace::detail::held held_[2];   // each role's records not yet stored (trace.cuh: held)
#endif

    // Carve from dynamic shared memory (the plan's smem_bytes include the rounding slack).
    __device__ pipeline_stages()
    {
        // a plan placed in a cuasync.layout starts base_offset bytes into the layout, whose origin
        // is aligned to the largest alignment of its parts (base_align; a lone plan's is its own)
        base = dynamic_smem<Config::base_align>() + Config::base_offset;
#ifdef CUASYNC_TRACE
        for (unsigned r = 0; r < 2u; ++r) {
            trace::event *e = trace::detail::ring_of(r + 1u);
            trace_rings[r] = e == CUASYNC_TRACE_OFF ? 0ull : (unsigned long long)__cvta_generic_to_global(e);
            held_[r].sp[0] = held_[r].sp[1] = 0u;
            held_[r].it[0] = held_[r].it[1] = 0u;
        }
        trace_one = trace::detail::lane() == 0u;   // a role's threads reach its records converged: lane 0 is there
#endif
    }
#ifdef CUASYNC_TRACE
    // A copy starts holding nothing: its end must not store the original's records again.
    __device__ pipeline_stages(const pipeline_stages &o) : base(o.base), trace_one(o.trace_one)
    {
        for (unsigned r = 0; r < 2u; ++r) {
            trace_rings[r] = o.trace_rings[r];
            held_[r].sp[0] = held_[r].sp[1] = 0u;
            held_[r].it[0] = held_[r].it[1] = 0u;
        }
    }
    // What each role still holds is stored when the pipeline ends (a producer's last issue).
    __device__ ~pipeline_stages() { trace_store(); }
#endif

    // Store the timeline records this thread holds: where it has slack (after issuing its MMAs,
    // before waiting for them); otherwise they wait for its next wait. Nothing without trace.
#ifdef CUASYNC_TRACE
    __device__ __forceinline__ void trace_store() const
    {
        store_held(1u);
        store_held(2u);
    }
#else
    __device__ __forceinline__ void trace_store() const {}
#endif

    __device__ mbarrier_t *full(int s) const { return reinterpret_cast<mbarrier_t *>(base + Config::full_offset) + s; }
    __device__ mbarrier_t *empty(int s) const { return reinterpret_cast<mbarrier_t *>(base + Config::empty_offset) + s; }
    __device__ mbarrier_t *full_barrier(const state &st) const { return full(st.index); }

    // The plan's scratch region (Config::scratch_bytes, 1024-aligned; nullptr-free: check the size).
    __device__ unsigned char *scratch() const { return base + Config::scratch_offset; }

    // The stage buffer of load `l` (a Config load index) at st; slice i of it for a load of
    // several boxes or a multicast load (slices are Config::load_box_smem[l] bytes apart).
    __device__ unsigned char *buffer(const state &st, int l) const
    {
        return base + (unsigned)st.index * Config::stage_pitch + Config::load_offset[l];
    }
    __device__ unsigned char *slice(const state &st, int l, unsigned i) const
    {
        return buffer(st, l) + i * Config::load_box_smem[l];
    }

#ifdef CUASYNC_TRACE
    // What role r holds, as events in its ring (an untraced block: nothing), without a branch
    // around the stores; then nothing is held. A wait's barrier is full for consumers and empty
    // for the producer, an issue's full, a release's empty. Every 64th iteration's wait adds a
    // clock pair to ring 0.
    __device__ __forceinline__ void store_held(unsigned role) const
    {
        trace::detail::held &h = held_[role - 1u];
        const unsigned long long rg = trace_rings[role - 1u];
        const unsigned long long d = h.t_end - h.t[0];
        const unsigned off0 = (role == 2u ? Config::full_offset : Config::empty_offset) + 8u * (h.sp[0] & 0xFFFFu);
        const unsigned off1 = (role == 2u ? Config::empty_offset : Config::full_offset) + 8u * (h.sp[1] & 0xFFFFu);
        trace::detail::store_held_event(rg, trace_one, h, 0u, d > 0xFFFFFFFEull ? 0xFFFFFFFEu : (unsigned)d,
                                        trace::detail::pipe_where(trace::wait, off0, (h.sp[0] >> 16) & 1u, role));
        trace::detail::store_held_event(rg, trace_one, h, 1u, 0u,
                                        trace::detail::pipe_where(role == 2u ? trace::release : trace::issue, off1,
                                                                  (h.sp[1] >> 16) & 1u, role));
        if (trace_one && rg != 0ull && (h.sp[0] >> 31) != 0u && (h.it[0] & 63u) == 0u)
            trace::detail::put(0u, trace::detail::where(trace::sync, 0u, 0u, 0u, role), h.it[0]);
        h.sp[0] = h.sp[1] = 0u;
    }
    // The timeline's record of a pipeline's issue or release at st (role 1 producer, 2
    // consumer): stamped now, held (one still held from before is stored first).
    __device__ __forceinline__ void traced(const state &st, unsigned role) const
    {
        trace::detail::held &h = held_[role - 1u];
        if ((h.sp[1] >> 31) != 0u) store_held(role);   // two in a row (a tile's last release): keep the first
        h.t[1] = trace::cycles(); h.it[1] = st.iteration; h.sp[1] = (unsigned)st.index | (st.phase << 16) | (1u << 31);
    }
    [[deprecated("cuasync 0.1.0: traced(kind, bar, st, role) is now traced(st, role): it records an issue (role 1) or a release (role 2) on the stage's barrier, whatever kind and bar say; the old name goes in a later release")]]
    __device__ void traced(unsigned kind, mbarrier_t *bar, const state &st, unsigned role) const
    {
        (void)kind; (void)bar;
        traced(st, role);
    }
    [[deprecated("cuasync 0.1.0: a pipeline's rings are no longer a site's (its records are held: store_held); the old name goes in a later release")]]
    __device__ trace::event *trace_ring(unsigned role) const { return trace::detail::ring_of(role); }
    // A role's wait at st: what the role still holds is stored first (the thread is about to
    // spin), then the wait is timed and held.
    template <class Wait>
    __device__ __forceinline__ void timed(unsigned role, const state &st, Wait wait) const
    {
        trace::detail::held &h = held_[role - 1u];
        if (Config::unified) trace_store();   // a thread of both roles: a hang here keeps both's records
        else store_held(role);
        h.t[0] = trace::cycles();
        wait();
        h.t_end = trace::cycles(); h.it[0] = st.iteration; h.sp[0] = (unsigned)st.index | (st.phase << 16) | (1u << 31);
    }
#endif
};

// Completion 0, a TMA/bulk plan: one producer thread arms full with the stage's tx bytes, and
// the copies it then issues on full_barrier(st) complete the phase as their bytes land. Pairs:
// producer_acquire ... producer_expect (then the copies) on the producer thread; consumer_wait
// ... consumer_release (below) on the consumers.
template <class Config>
struct pipeline_tx_bytes : pipeline_stages<Config> {
    typedef stage_state<Config::stages> state;

    // Thread 0 issues (unified: it also consumes; partitioned: the first of the producer warps).
    __device__ static bool is_producer_thread() { return threadIdx.x == 0; }

    // What the watchdog records for a wait of the pipeline (role 1 producer, 2 consumer).
    __device__ watchdog::site site(mbarrier_t *bar, const state &st, unsigned role) const
    {
#ifdef CUASYNC_WATCHDOG
        const unsigned received = smem_addr(pipeline<Config>::progress() + Config::progress_received + st.index);
        const unsigned armed = smem_addr(pipeline<Config>::progress() + Config::progress_armed);
#else
        const unsigned received = 0u, armed = 0u;
#endif
        // base: the layout's origin (the plan's own base for a lone plan), so that a post-mortem
        // finds which of a kernel's pipelines owns the barrier (hang.lua)
        watchdog::site s{ smem_addr(bar), st.phase, smem_addr(this->base) - Config::base_offset, (unsigned)st.index, role, st.iteration,
                               received, armed };
#ifdef CUASYNC_TRACE
        s.trace_ring = CUASYNC_TRACE_OFF;   // the pipeline times its own waits (timed)
#endif
        return s;
    }

#if __CUDA_ARCH__ >= 900
    // Producer thread: arm full with the plan's tx bytes (one arrival); then issue the copies.
    __device__ void producer_expect(const state &st) const { producer_expect_bytes(st, Config::tx_bytes); }

    // The same with another byte count, for a stage whose loads differ from the plan's (a last
    // partial tile loaded with a smaller map). Prefer producer_expect: the plan's count is derived.
    __device__ void producer_expect_bytes(const state &st, unsigned bytes) const
    {
        mbarrier::arrive_expect_tx(this->full(st.index), bytes);
#ifdef CUASYNC_TRACE
        this->traced(st, 1u);   // the copies follow at once
#endif
#ifdef CUASYNC_WATCHDOG
        pipeline<Config>::progress()[Config::progress_armed] = st.iteration + 1u;
#endif
    }
#endif

    // Consumer threads: wait until the stage at st holds data (its tx bytes landed).
    __device__ void consumer_wait(const state &st) const
    {
#ifdef CUASYNC_TRACE
        this->timed(2u, st,
                    [&] { mbarrier::wait_parity(this->full(st.index), st.phase, site(this->full(st.index), st, 2u)); });
#else
        mbarrier::wait_parity(this->full(st.index), st.phase, site(this->full(st.index), st, 2u));
#endif
    }

    // A cp.async plan's (pipeline_cp_async.cuh): here the copies complete full themselves.
    template <class... A> __device__ void producer_copy(A...) const
    { static_assert(refused<A...>::value, "cuasync: producer_copy is for cp.async plans; a TMA plan issues tma::load on full_barrier(st)"); }
    template <int L, class... A> __device__ void producer_copy(A...) const
    { static_assert(refused<A...>::value, "cuasync: producer_copy is for cp.async plans; a TMA plan issues tma::load on full_barrier(st)"); }
    template <class... A> __device__ void producer_commit(A...) const
    { static_assert(refused<A...>::value, "cuasync: producer_commit is for cp.async plans; a TMA plan arms full with producer_expect"); }
};

// The completion kind pipeline<Config> is built on, by Config::completion.
template <class Config, int Completion = Config::completion> struct pipeline_completion;
template <class Config> struct pipeline_completion<Config, 0> { typedef pipeline_tx_bytes<Config> type; };
template <class Config> struct pipeline_completion<Config, 1> { typedef pipeline_cp_async_mbarrier<Config> type; };
template <class Config> struct pipeline_completion<Config, 2> { typedef pipeline_cp_async_group<Config> type; };

// The pipeline of a cuasync.pipeline plan. Config is the generated struct
// cuasync::pipelines::NAME. Every thread of the block constructs it and calls init(); then:
//   producer thread (is_producer_thread()):  for each tile: producer_acquire(st);
//       producer_expect(st); tma::load(buffer(st, Config::A), &mapA, full_barrier(st), ...); ...;
//       st.advance();   then producer_tail(st) in a cluster kernel
//       (a cp.async plan: producer_copy(st, Config::A, src); producer_commit(st) instead)
//   consumer threads (is_consumer()):        for each tile: consumer_wait(st); read buffer(st, l);
//       consumer_release(st); st.advance();
// is_producer_thread, site, consumer_wait and the producer's fill and commit come from the
// completion kind (pipeline_completion<Config>::type); the rest is here.
template <class Config>
struct pipeline : pipeline_completion<Config>::type {
    typedef stage_state<Config::stages> state;

private:
    // The arrival on a peer's empty barrier: release at CTA scope, as CUTLASS's
    // ClusterBarrier::arrive(cta_id) issues it: the stage's reads are done (registers hold them,
    // or wgmma.wait_group returned) before the arrive issues. The cluster-scope form cost a
    // cluster-2 multicast GEMM 36% of its speed on the H200 (examples/gemm_ablation.lua, rungs *_cl).
    struct release_cta {
#if __CUDA_ARCH__ >= 900
        __device__ void operator()(mbarrier_t *bar, unsigned r) const { mbarrier::arrive_cluster_cta(bar, r); }
#endif
    };

public:
    // Roles. Unified: every thread consumes (and produces: is_producer_thread, the completion
    // kind's). Partitioned: the first producer_warps warps produce, the next consumer_threads
    // threads consume.
    __device__ static bool is_producer_warp() { return Config::unified ? threadIdx.x < 32 : threadIdx.x < 32 * Config::producer_warps; }
    __device__ static unsigned consumer_index() { return Config::unified ? threadIdx.x : threadIdx.x - 32 * Config::producer_warps; }
    __device__ static bool is_consumer()
    {
        return Config::unified ? true : (threadIdx.x >= 32 * Config::producer_warps && consumer_index() < Config::consumer_threads);
    }

    // Every thread of the block (and, in a cluster, of every block of the cluster): thread 0
    // initializes the barriers, then the block (cluster) synchronizes so that every barrier is
    // initialized before a copy or a peer signals it.
    __device__ void init() const
    {
#ifdef CUASYNC_TRACE
        trace::detail::begin_block();
#endif
        if (threadIdx.x == 0) {
            for (int s = 0; s < Config::stages; ++s) {
                mbarrier::init(this->full(s), Config::full_count);
                mbarrier::init(this->empty(s), Config::empty_count);
            }
            order_init<Config>(this->base);   // nothing for a plan without an order
#ifdef CUASYNC_WATCHDOG
            for (unsigned w = 0; w < Config::progress_words; ++w) progress()[w] = 0u;
#endif
#if __CUDA_ARCH__ >= 900
            mbarrier::fence_init();
#endif
        }
#if __CUDA_ARCH__ >= 900
        if (Config::cluster_size > 1) { cluster::sync(); return; }
#endif
        __syncthreads();
    }

    __device__ static state producer_start() { return state::producer_start(); }
    __device__ static state consumer_start() { return state::consumer_start(); }

#ifdef CUASYNC_WATCHDOG
    // With the watchdog: progress words in static shared memory, for the post-mortem, placed by
    // the generated Config. [progress_received + s]: the arrivals empty[s] has received
    // (consumers count their own and their peers' releases); [progress_armed]: the stages the
    // producer has armed; [progress_committed + s] (cp.async): the arrivals full[s] was sent.
    __device__ static unsigned *progress()
    {
        __shared__ unsigned words[Config::progress_words];
        return words;
    }
#endif

    // Producer thread(s): wait until the stage at st is free (its consumers, in every block whose
    // stage this block's copies reach, released it). Its pair: producer_expect (TMA/bulk) or
    // producer_commit (cp.async), after the stage's copies are issued.
    __device__ void producer_acquire(const state &st) const
    {
#ifdef CUASYNC_TRACE
        this->timed(1u, st,
                    [&] { mbarrier::wait_parity(this->empty(st.index), st.phase, this->site(this->empty(st.index), st, 1u)); });
#else
        mbarrier::wait_parity(this->empty(st.index), st.phase, this->site(this->empty(st.index), st, 1u));
#endif
    }

#if __CUDA_ARCH__ >= 900
    // Producer thread, in a cluster kernel, after its last tile: wait for the releases of the
    // last `stages` tiles, so that no peer still signals this block's barriers after it exits.
    // With the watchdog, each release also adds to this block's progress word (release_on) by a
    // relaxed remote red that the CTA-scope arrive after it does not order: the arrive can land
    // first, and a block that exited then would take the red into freed shared memory. So the
    // tail also waits until every release of the run is counted here (drain_progress).
    __device__ void producer_tail(state st) const
    {
        for (int i = 0; i < Config::stages; ++i) { producer_acquire(st); st.advance(); }
#ifdef CUASYNC_WATCHDOG
        if (Config::peer_count > 1) drain_progress(st.iteration - (unsigned)Config::stages);
#endif
    }

#ifdef CUASYNC_WATCHDOG
private:
    // Producer thread: wait until empty[s]'s progress word holds every release of `iterations`
    // producer iterations from the start (empty_count per iteration that used stage s).
    // ld.volatile.shared.u32 v, [a];                                      // PTX ISA 1.0, sm_10
    __device__ void drain_progress(unsigned iterations) const
    {
        for (unsigned s = 0; s < (unsigned)Config::stages; ++s) {
            const unsigned uses = iterations > s ? (iterations - 1u - s) / (unsigned)Config::stages + 1u : 0u;
            const unsigned want = uses * Config::empty_count;
            const unsigned word = smem_addr(progress() + Config::progress_received + s);
            const state at{ (int)s, 0u, iterations };
            watchdog::spin_until([&] {
                unsigned got;
                asm volatile("ld.volatile.shared.u32 %0, [%1];" : "=r"(got) : "r"(word) : "memory");
                return got >= want;
            }, this->site(this->empty(s), at, 1u));
        }
    }

public:
#endif

    // The blocks of this block's multicast line for load l (bit r: cluster rank r), and this
    // block's position along it (which slice it issues): the plan's peers (cluster.cuh).
    __device__ static unsigned short multicast_mask(int l) { return cluster::multicast_mask<Config>(l); }
    __device__ static unsigned slice_index(int l) { return cluster::slice_index<Config>(l); }

    // One arrival on the empty barrier of the stage at st in peer r (a cluster rank), issued by
    // arrive(bar, r), and counted in r's progress word for the watchdog: what consumer_release
    // sends each peer; by default at CTA scope (release_cta, above, says why).
    template <class Arrive = release_cta>
    __device__ void release_on(const state &st, unsigned r, Arrive arrive = Arrive()) const
    {
#ifdef CUASYNC_WATCHDOG
        cluster::red_add_u32(cluster::map_shared_addr(progress() + Config::progress_received + st.index, r), 1u);
#endif
        arrive(this->empty(st.index), r);
    }
#endif

    // Consumer threads: done reading the stage at st (the pair of consumer_wait); every consumer
    // thread calls it. The plan's release form says who arrives on the empty barrier of this block
    // and of every block whose copies land here (its peers): release = thread: every thread, on
    // each peer in turn; warp: lane k of each warp on the k-th peer (lanes in parallel, after
    // __syncwarp); warpgroup: lane j of warp w of each warpgroup on peer 4 j + w (warps in
    // parallel; the warpgroup must be done with the stage, as after wgmma.wait_group: a wgmma is
    // one warpgroup operation).
    __device__ void consumer_release(const state &st) const { consumer_release(st, release_cta()); }

    // The same with the arrivals on peers issued by arrive(bar, r) instead of release_cta: a
    // kernel that needs another form (examples/gemm_ablation.lua measures the cluster-scope one).
    template <class Arrive>
    __device__ void consumer_release(const state &st, Arrive arrive) const
    {
#ifdef CUASYNC_TRACE
        this->traced(st, 2u);
#endif
        unsigned k = 0;   // which peer this thread arrives on
        if (Config::release == 1) {
            __syncwarp();
            k = threadIdx.x & 31u;
        } else if (Config::release == 2) {
            k = 4u * (threadIdx.x & 31u) + (consumer_index() / 32u) % 4u;
        }
#if __CUDA_ARCH__ >= 900
        if (Config::peer_count > 1) {
            if (Config::release == 0) {
                for (unsigned j = 0; j < Config::peer_count; ++j) release_on(st, cluster::peer_rank<Config>(j), arrive);
            } else if (k < Config::peer_count) {
                release_on(st, cluster::peer_rank<Config>(k), arrive);
            }
            return;
        }
#endif
        if (k != 0) return;
#ifdef CUASYNC_WATCHDOG
        atomicAdd(progress() + Config::progress_received + st.index, 1u);
#endif
        mbarrier::arrive(this->empty(st.index));
    }
};

} // namespace cuasync
