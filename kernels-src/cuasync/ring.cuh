// cuasync/ring.cuh — a ring of stages written by hand, without a plan: stage_state<N> (where a
// side of the ring stands: stage index and phase parity) and pipeline_ring<N> (N pairs of
// mbarriers as a __shared__ object, counts given at init): full[s] (the stage holds data) and
// empty[s] (the stage may be refilled).
//   producer: acquire (wait empty) -> fill -> commit (arrive on full, or let the copy complete it)
//   consumer: wait (wait full) -> use -> release (arrive on empty)
// The producer starts on the opposite phase, so its first pass finds every fresh stage free.
// pipeline<Config> (pipeline.cuh) walks its stages with the same stage_state.
#pragma once

#include <cuasync/mbarrier.cuh>
#include <cuasync/cp_async.cuh>

namespace cuasync {

// Where a ring of Stages barriers stands: the stage index and the parity of the phase to wait
// for there, flipped each time the index wraps. A consumer starts at phase 0; a producer waiting
// for empty slots starts at phase 1, so its first pass finds every (fresh) slot already free.
template <int Stages>
struct stage_state {
    static_assert(Stages >= 1, "cuasync: a ring needs at least one stage");
    int index;
    unsigned phase;
    unsigned iteration;   // steps since the start (the watchdog's post-mortem names it)
    __device__ static stage_state consumer_start() { return stage_state{0, 0u, 0u}; }
    __device__ static stage_state producer_start() { return stage_state{0, 1u, 0u}; }
    // The state `n` steps from the start (iteration n of a loop that began at `start`).
    __device__ static stage_state at(unsigned long long n, unsigned start_phase = 0u)
    {
        return stage_state{(int)(n % Stages), start_phase ^ (unsigned)((n / Stages) & 1u), (unsigned)n};
    }
    __device__ void advance()
    {
        ++iteration;
        if (++index == Stages) { index = 0; phase ^= 1u; }
    }
    // n steps at once: the index moves n mod Stages, the phase flips once per wrap.
    __device__ void advance(unsigned n)
    {
        const unsigned next = (unsigned)index + n;
        iteration += n;
        phase ^= (next / Stages) & 1u;
        index = (int)(next % Stages);
    }
};

template <int Stages>
struct pipeline_ring {
    static_assert(Stages >= 1 && Stages <= 64, "cuasync: a pipeline has 1..64 stages");
    mbarrier_t full[Stages];
    mbarrier_t empty[Stages];
    typedef stage_state<Stages> state;

    // One thread, before any use (then a block barrier): full expects one arrival per producer
    // (a bulk/TMA producer arrives once, with expect_tx; a cp.async producer thread once, by
    // producer_commit's noinc arrive), empty one per consumer.
    __device__ void init(unsigned producers, unsigned consumers)
    {
        for (int s = 0; s < Stages; ++s) {
            mbarrier::init(&full[s], producers);
            mbarrier::init(&empty[s], consumers);
        }
#if __CUDA_ARCH__ >= 900
        mbarrier::fence_init();   // the async proxy (bulk copies) completes on these barriers
#endif
    }

    // The same method names as pipeline<Config> (the counts are the caller's here, the plan's
    // there). Producer: wait until the stage at st is free.
    __device__ void producer_acquire(const state &st) { wait(&empty[st.index], st, 1u); }

    // Producer, cp.async form: this thread's copies issued since acquire count as its arrival
    // on full once they land (cp.async.mbarrier.arrive.noinc).
    __device__ void producer_commit(const state &st) { cp_async::mbarrier_arrive_noinc(&full[st.index]); }

    [[deprecated("cuasync 0.1.0: pipeline_ring::producer_commit_cp_async is now producer_commit (same argument); the old name goes in a later release")]]
    // Deprecated (0.1.0): the old name of producer_commit, kept for a release (CHANGELOG.md).
    __device__ void producer_commit_cp_async(const state &st) { producer_commit(st); }

    // Producer, plain form: data written with ordinary stores; arrive (release) on full.
    __device__ void producer_arrive(const state &st) { mbarrier::arrive(&full[st.index]); }

#if __CUDA_ARCH__ >= 900
    // Producer, bulk/TMA form (one thread): announce the bytes the copies will complete_tx, and
    // arrive. The copies are then issued on full_barrier(st).
    __device__ void producer_expect_bytes(const state &st, unsigned tx_bytes) { mbarrier::arrive_expect_tx(&full[st.index], tx_bytes); }

    [[deprecated("cuasync 0.1.0: pipeline_ring::producer_expect(st, tx_bytes) is now producer_expect_bytes (same arguments); the old name goes in a later release")]]
    // Deprecated (0.1.0): the old name of producer_expect_bytes, kept for a release (CHANGELOG.md).
    __device__ void producer_expect(const state &st, unsigned tx_bytes) { producer_expect_bytes(st, tx_bytes); }
#endif

    __device__ mbarrier_t *full_barrier(const state &st) { return &full[st.index]; }

    // Consumer: wait until the stage at st holds data.
    __device__ void consumer_wait(const state &st) { wait(&full[st.index], st, 2u); }

    // Consumer: done reading the stage at st.
    __device__ void consumer_release(const state &st) { mbarrier::arrive(&empty[st.index]); }

private:
    // A sited wait: a hang names the stage, role and iteration (no progress words: the ring has
    // no plan to place them).
    __device__ void wait(mbarrier_t *bar, const state &st, unsigned role)
    {
        mbarrier::wait_parity(bar, st.phase, watchdog::site{ smem_addr(bar), st.phase, smem_addr(this), (unsigned)st.index,
                                                             role, st.iteration, 0u, 0u });
    }
};

} // namespace cuasync
