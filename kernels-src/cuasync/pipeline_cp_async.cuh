// cuasync/pipeline_cp_async.cuh — the cp.async completions of a plan pipeline: how the producer
// threads of a cp.async plan fill a stage, and how the stage's full barrier completes. One class
// per completion kind, each over the plan's stages (pipeline_stages<Config>, pipeline.cuh) and
// walking them with a stage_state; pipeline<Config> derives from the one its Config::completion
// names. Include <cuasync/pipeline.cuh>, which includes this header.
//   completion "mbarrier" (1), pipeline_cp_async_mbarrier: producer_copy -> producer_commit
//     (cp.async.mbarrier.arrive.noinc: full counts one arrival per producer thread, sent when
//     that thread's copies landed) ... consumer_wait (waits on full alone)
//   completion "group" (2), pipeline_cp_async_group: producer_copy -> producer_commit (closes the
//     thread's cp.async group) ... consumer_wait (wait_group for this thread's own group, then an
//     arrival on full, then the wait on full: full counts one arrival per thread)
// Both issue their copies through pipeline_cp_async_copies. cp.async is Ampere's: from sm_80.
#pragma once

#include <cuasync/mbarrier.cuh>
#include <cuasync/cp_async.cuh>
#include <cuasync/ring.cuh>   // stage_state

namespace cuasync {

template <class Config> struct pipeline_stages;   // pipeline.cuh: the stage buffers and barriers
template <class Config> struct pipeline;          // pipeline.cuh: the watchdog's progress words

// What both cp.async completions share: who copies, the copies each producer thread issues, what
// the watchdog records for a wait.
template <class Config>
struct pipeline_cp_async_copies : pipeline_stages<Config> {
    typedef stage_state<Config::stages> state;

    // Unified: every thread copies. Partitioned: the first producer_threads threads copy.
    __device__ static bool is_producer_thread() { return threadIdx.x < Config::producer_threads; }

    // What the watchdog records for a wait of the pipeline (role 1 producer, 2 consumer): a full
    // wait records the commits its stage received (a cp.async plan arms no stage).
    __device__ watchdog::site site(mbarrier_t *bar, const state &st, unsigned role) const
    {
#ifdef CUASYNC_WATCHDOG
        const bool full_wait = bar == this->full(st.index);
        const unsigned received = smem_addr(pipeline<Config>::progress() + (full_wait ? Config::progress_committed : Config::progress_received) + st.index);
#else
        const unsigned received = 0u;
#endif
        watchdog::site s{ smem_addr(bar), st.phase, smem_addr(this->base) - Config::base_offset, (unsigned)st.index, role, st.iteration,
                               received, 0u };
#ifdef CUASYNC_TRACE
        s.trace_ring = CUASYNC_TRACE_OFF;   // the pipeline times its own waits (timed)
#endif
        return s;
    }

    // Producer threads, between producer_acquire and producer_commit: each issues its share of
    // load l's stage: copies k of thread t are vectors t + k * producer_threads (consecutive
    // threads, consecutive addresses), of Config::load_vector[l] bytes with .cg or .ca as the plan
    // says. The source is the stage's first byte (a contiguous tile), or a functor row(r) giving
    // the global address of row r of the stage (Config::load_row[l] bytes each: a gather).
    template <class T>
    __device__ void producer_copy(const state &st, int l, const T *src) const
    {
        const unsigned char *from = reinterpret_cast<const unsigned char *>(src);
        unsigned char *to = this->buffer(st, l);
        // Not unrolled, as libcu++'s memcpy_async issues them: one copy per pass. Unrolled, each
        // thread issued its copies in a burst, and a streaming copy on the H200 lost 0.6-0.9% at
        // vectors of 16 and 8 bytes (docs/cp-async.md).
#pragma unroll 1
        for (unsigned k = 0; k < Config::load_copies[l]; ++k) {
            const unsigned off = (threadIdx.x + k * Config::producer_threads) * Config::load_vector[l];
            copy_vector(l, to + off, from + off);
        }
    }
    template <class RowPointer>
    __device__ void producer_copy(const state &st, int l, RowPointer row) const
    {
        unsigned char *to = this->buffer(st, l);
        const unsigned per_row = Config::load_row[l] / Config::load_vector[l];
        // unrolled, so that several copies' row lookups are in flight at once (the contiguous
        // form's rolled loop was measured on streaming copies only)
#pragma unroll 8
        for (unsigned k = 0; k < Config::load_copies[l]; ++k) {
            const unsigned v = threadIdx.x + k * Config::producer_threads;
            const unsigned char *from = reinterpret_cast<const unsigned char *>(row(v / per_row));
            copy_vector(l, to + v * Config::load_vector[l], from + (v % per_row) * Config::load_vector[l]);
        }
    }
    // A load planned with zero_fill = true: only the first valid_bytes of the contiguous source
    // are read; the rest of the stage reads as zero (a last partial tile).
    template <int L, class T>
    __device__ void producer_copy(const state &st, const T *src, unsigned valid_bytes) const
    {
        static_assert(Config::load_zero_fill[L], "cuasync: this load was not planned with zero_fill = true");
        const unsigned char *from = reinterpret_cast<const unsigned char *>(src);
        unsigned char *to = this->buffer(st, L);
        constexpr unsigned V = Config::load_vector[L];
        for (unsigned k = 0; k < Config::load_copies[L]; ++k) {
            const unsigned off = (threadIdx.x + k * Config::producer_threads) * V;
            const unsigned n = off >= valid_bytes ? 0u : (valid_bytes - off < V ? valid_bytes - off : V);
            if (V == 16 && Config::load_cg[L]) cp_async::copy_cg_zfill(to + off, n ? from + off : from, n);
            else cp_async::copy_ca_zfill<V>(to + off, n ? from + off : from, n);
        }
    }

    // A TMA/bulk plan's (pipeline.cuh): a cp.async stage completes by its commits, not tx bytes.
    template <class... A> __device__ void producer_expect(A...) const
    { static_assert(refused<A...>::value, "cuasync: producer_expect is for TMA/bulk plans; a cp.async plan ends a stage's copies with producer_commit"); }
    template <class... A> __device__ void producer_expect_bytes(A...) const
    { static_assert(refused<A...>::value, "cuasync: producer_expect_bytes is for TMA/bulk plans; a cp.async plan ends a stage's copies with producer_commit"); }

private:
    template <class> friend struct pipeline_cp_async_mbarrier;   // they count their commits
    template <class> friend struct pipeline_cp_async_group;

#ifdef CUASYNC_WATCHDOG
    // The watchdog's count of the arrivals full[s] was sent (one per committing thread; the
    // lanes that commit together add once).
    __device__ static void count_commit(const state &st)
    {
        const unsigned active = __activemask();
        if ((threadIdx.x & 31u) == (unsigned)(__ffs(active) - 1))
            atomicAdd(pipeline<Config>::progress() + Config::progress_committed + st.index, (unsigned)__popc(active));
    }
#endif

    // One cp.async of load l's vector size, .cg or .ca as planned (l is a constant once inlined).
    __device__ static void copy_vector(int l, void *to, const void *from)
    {
        if (Config::load_vector[l] == 16) {
            if (Config::load_cg[l]) cp_async::copy_cg(to, from);
            else cp_async::copy_ca<16>(to, from);
        } else if (Config::load_vector[l] == 8) {
            cp_async::copy_ca<8>(to, from);
        } else {
            cp_async::copy_ca<4>(to, from);
        }
    }
};

// completion "mbarrier": the copies complete full themselves. Pairs: producer_acquire (wait
// empty) ... producer_commit on the producer threads; consumer_wait ... consumer_release
// (pipeline.cuh) on the consumers.
template <class Config>
struct pipeline_cp_async_mbarrier : pipeline_cp_async_copies<Config> {
    typedef stage_state<Config::stages> state;

    // Producer threads: the stage's copies are issued; this thread's arrival on full once they
    // landed (cp.async.mbarrier.arrive.noinc; full expects one per producer thread).
    __device__ void producer_commit(const state &st)
    {
#ifdef CUASYNC_TRACE
        this->traced(st, 1u);
#endif
#ifdef CUASYNC_WATCHDOG
        this->count_commit(st);
#endif
        cp_async::mbarrier_arrive_noinc(this->full(st.index));
    }

    // Consumer threads: wait until the stage at st holds data (every producer thread's arrival).
    __device__ void consumer_wait(const state &st) const
    {
#ifdef CUASYNC_TRACE
        this->timed(2u, st,
                    [&] { mbarrier::wait_parity(this->full(st.index), st.phase, this->site(this->full(st.index), st, 2u)); });
#else
        mbarrier::wait_parity(this->full(st.index), st.phase, this->site(this->full(st.index), st, 2u));
#endif
    }
};

// completion "group": each thread waits for its own copies, then says so on full (producer =
// "all": the threads that copy are the threads that consume). Pairs: producer_acquire ...
// producer_commit, whose group consumer_wait waits for; consumer_wait ... consumer_release.
template <class Config>
struct pipeline_cp_async_group : pipeline_cp_async_copies<Config> {
    typedef stage_state<Config::stages> state;
    unsigned committed;   // the stages this thread has committed

    __device__ pipeline_cp_async_group() : committed(0u) {}

    // Producer threads: the stage's copies are issued; close this thread's group for the stage.
    __device__ void producer_commit(const state &st)
    {
#ifdef CUASYNC_TRACE
        this->traced(st, 1u);
#endif
        cp_async::commit_group();
        committed = st.iteration + 1u;
    }

    // Consumer threads: wait until the stage at st holds data: first this thread's own group of
    // the stage (wait_group with the groups committed after it still in flight: Config::wait_depth
    // in the steady state), then an arrival on full, then the wait for every thread's arrival.
    __device__ void consumer_wait(const state &st) const
    {
        wait_groups<Config::wait_depth>::le(committed - (st.iteration + 1u));
#ifdef CUASYNC_WATCHDOG
        this->count_commit(st);
#endif
        mbarrier::arrive(this->full(st.index));
#ifdef CUASYNC_TRACE
        this->timed(2u, st,
                    [&] { mbarrier::wait_parity(this->full(st.index), st.phase, this->site(this->full(st.index), st, 2u)); });
#else
        mbarrier::wait_parity(this->full(st.index), st.phase, this->site(this->full(st.index), st, 2u));
#endif
    }

private:
    // cp.async.wait_group takes an immediate: wait_groups<N>::le(n) waits with min(n, N) pending.
    template <int N, int Dummy = 0>
    struct wait_groups {
        __device__ static void le(unsigned n)
        {
            if (n >= (unsigned)N) cp_async::wait_group<N>();
            else wait_groups<N - 1>::le(n);
        }
    };
    template <int Dummy>
    struct wait_groups<0, Dummy> {
        __device__ static void le(unsigned) { cp_async::wait_group<0>(); }
    };
};

} // namespace cuasync
