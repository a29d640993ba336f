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
#pragma once

#include <cuasync/mbarrier.cuh>
#include <cuasync/cp_async.cuh>
#include <cuasync/bulk.cuh>
#include <cuasync/cluster.cuh>   // the plan's peers
#include <cuasync/ring.cuh>      // stage_state; pipeline_ring for those who include this header

namespace cuasync {

// The pipeline of a cuasync.pipeline plan. Config is the generated struct
// cuasync::pipelines::NAME. Every thread of the block constructs it and calls init(); then:
//   producer thread (is_producer_thread()):  for each tile: producer_acquire(st);
//       producer_expect(st); tma::load(buffer(st, Config::A), &mapA, full_barrier(st), ...); ...;
//       st.advance();   then producer_tail(st) in a cluster kernel
//   consumer threads (is_consumer()):        for each tile: consumer_wait(st); read buffer(st, l);
//       consumer_release(st); st.advance();
template <class Config>
struct pipeline {
    static_assert(Config::stages >= 1 && Config::stages <= 64, "cuasync: a pipeline has 1..64 stages");
    static_assert((Config::align & (Config::align - 1)) == 0, "cuasync: stage alignment must be a power of two");
    static_assert(Config::full_offset % 8 == 0 && Config::empty_offset % 8 == 0, "cuasync: mbarriers are 8-byte aligned");
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
    unsigned char *base;   // the dynamic shared memory, rounded up to Config::align
    unsigned committed;    // cp.async groups: the stages this thread has committed

    // Carve from dynamic shared memory (the plan's smem_bytes include the rounding slack).
    __device__ pipeline() : committed(0u)
    {
        extern __shared__ unsigned char cuasync_pipeline_smem_[];
        const unsigned addr = smem_addr(cuasync_pipeline_smem_);
        const unsigned aligned = (addr + Config::align - 1u) & ~(Config::align - 1u);
        base = cuasync_pipeline_smem_ + (aligned - addr);
    }

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

    // Roles. Unified: every thread consumes and thread 0 also produces (cp.async: every thread
    // copies). Partitioned: the first producer_warps warps produce (thread 0 issues; cp.async: the
    // first producer_threads threads copy), the next consumer_threads threads consume.
    __device__ static bool is_producer_thread()
    {
        return Config::completion == 0 ? threadIdx.x == 0 : threadIdx.x < Config::producer_threads;
    }
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
        if (threadIdx.x == 0) {
            for (int s = 0; s < Config::stages; ++s) {
                mbarrier::init(full(s), Config::full_count);
                mbarrier::init(empty(s), Config::empty_count);
            }
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
    // producer has armed.
    __device__ static unsigned *progress()
    {
        __shared__ unsigned words[Config::progress_words];
        return words;
    }
#endif

    // What the watchdog records for a wait of this pipeline (role 1 producer, 2 consumer). A
    // cp.async plan's full wait records the commits its stage received, not the stages armed.
    __device__ watchdog::site site(mbarrier_t *bar, const state &st, unsigned role) const
    {
#ifdef CUASYNC_WATCHDOG
        const bool cp_full = Config::completion != 0 && bar == full(st.index);
        const unsigned received = smem_addr(progress() + (cp_full ? Config::progress_committed : Config::progress_received) + st.index);
        const unsigned armed = Config::completion != 0 ? 0u : smem_addr(progress() + Config::progress_armed);
#else
        const unsigned received = 0u, armed = 0u;
#endif
        return watchdog::site{ smem_addr(bar), st.phase, smem_addr(base), (unsigned)st.index, role, st.iteration,
                               received, armed };
    }

    // Producer thread: wait until the stage at st is free (its consumers, in every block whose
    // stage this block's copies reach, released it).
    __device__ void producer_acquire(const state &st) const
    {
        mbarrier::wait_parity(empty(st.index), st.phase, site(empty(st.index), st, 1u));
    }

    // cp.async plans. Each producer thread issues its share of load l's stage: copies k of thread
    // t are vectors t + k * producer_threads (consecutive threads, consecutive addresses), of
    // Config::load_vector[l] bytes with .cg or .ca as the plan says. The source is the stage's
    // first byte (a contiguous tile), or a functor row(r) giving the global address of row r of
    // the stage (Config::load_row[l] bytes each: a gather).
    template <class T>
    __device__ void producer_copy(const state &st, int l, const T *src) const
    {
        static_assert(Config::completion != 0, "cuasync: producer_copy is for cp.async plans; a TMA plan issues tma::load on full_barrier(st)");
        const unsigned char *from = reinterpret_cast<const unsigned char *>(src);
        unsigned char *to = buffer(st, l);
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
        static_assert(Config::completion != 0, "cuasync: producer_copy is for cp.async plans");
        unsigned char *to = buffer(st, l);
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
        static_assert(Config::completion != 0 && Config::load_zero_fill[L], "cuasync: this load was not planned with zero_fill = true");
        const unsigned char *from = reinterpret_cast<const unsigned char *>(src);
        unsigned char *to = buffer(st, L);
        constexpr unsigned V = Config::load_vector[L];
        for (unsigned k = 0; k < Config::load_copies[L]; ++k) {
            const unsigned off = (threadIdx.x + k * Config::producer_threads) * V;
            const unsigned n = off >= valid_bytes ? 0u : (valid_bytes - off < V ? valid_bytes - off : V);
            if (V == 16 && Config::load_cg[L]) cp_async::copy_cg_zfill(to + off, n ? from + off : from, n);
            else cp_async::copy_ca_zfill<V>(to + off, n ? from + off : from, n);
        }
    }

    // Producer threads, cp.async: the stage's copies are issued. completion "mbarrier": this
    // thread's arrival on full once its copies landed (cp.async.mbarrier.arrive.noinc; full
    // expects one per producer thread). "group": close this thread's group for the stage.
    __device__ void producer_commit(const state &st)
    {
        static_assert(Config::completion != 0, "cuasync: producer_commit is for cp.async plans; a TMA plan arms full with producer_expect");
        if (Config::completion == 1) {
#ifdef CUASYNC_WATCHDOG
            count_commit(st);
#endif
            cp_async::mbarrier_arrive_noinc(full(st.index));
        } else {
            cp_async::commit_group();
            committed = st.iteration + 1u;
        }
    }

#if __CUDA_ARCH__ >= 900
    // Producer thread: arm full with the plan's tx bytes (one arrival); then issue the copies.
    __device__ void producer_expect(const state &st) const { producer_expect_bytes(st, Config::tx_bytes); }

    // The same with another byte count, for a stage whose loads differ from the plan's (a last
    // partial tile loaded with a smaller map). Prefer producer_expect: the plan's count is derived.
    __device__ void producer_expect_bytes(const state &st, unsigned bytes) const
    {
        mbarrier::arrive_expect_tx(full(st.index), bytes);
#ifdef CUASYNC_WATCHDOG
        progress()[Config::progress_armed] = st.iteration + 1u;
#endif
    }

    // Producer thread, in a cluster kernel, after its last tile: wait for the releases of the
    // last `stages` tiles, so that no peer still signals this block's barriers after it exits.
    __device__ void producer_tail(state st) const
    {
        for (int i = 0; i < Config::stages; ++i) { producer_acquire(st); st.advance(); }
    }

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
        arrive(empty(st.index), r);
    }
#endif

    // Consumer threads: wait until the stage at st holds data. cp.async groups: first this
    // thread's own group of the stage (wait_group with the groups committed after it still in
    // flight: Config::wait_depth in the steady state), then an arrival on full, then the wait for
    // every thread's arrival.
    __device__ void consumer_wait(const state &st) const
    {
        if (Config::completion == 2) {
            wait_groups<Config::wait_depth>::le(committed - (st.iteration + 1u));
#ifdef CUASYNC_WATCHDOG
            count_commit(st);
#endif
            mbarrier::arrive(full(st.index));
        }
        mbarrier::wait_parity(full(st.index), st.phase, site(full(st.index), st, 2u));
    }

    // Consumer threads: done reading the stage at st; every consumer thread calls it. The plan's
    // release form says who arrives on the empty barrier of this block and of every block whose
    // copies land here (its peers): release = thread: every thread, on each peer in turn; warp:
    // lane k of each warp on the k-th peer (lanes in parallel, after __syncwarp); warpgroup:
    // lane j of warp w of each warpgroup on peer 4 j + w (warps in parallel; the warpgroup must
    // be done with the stage, as after wgmma.wait_group: a wgmma is one warpgroup operation).
    __device__ void consumer_release(const state &st) const { consumer_release(st, release_cta()); }

    // The same with the arrivals on peers issued by arrive(bar, r) instead of release_cta: a
    // kernel that needs another form (examples/gemm_ablation.lua measures the cluster-scope one).
    template <class Arrive>
    __device__ void consumer_release(const state &st, Arrive arrive) const
    {
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
        mbarrier::arrive(empty(st.index));
    }

private:
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

#ifdef CUASYNC_WATCHDOG
    // The watchdog's count of the arrivals full[s] was sent (one per committing thread; the
    // lanes that commit together add once).
    __device__ static void count_commit(const state &st)
    {
        const unsigned active = __activemask();
        if ((threadIdx.x & 31u) == (unsigned)(__ffs(active) - 1))
            atomicAdd(progress() + Config::progress_committed + st.index, (unsigned)__popc(active));
    }
#endif
};

} // namespace cuasync
