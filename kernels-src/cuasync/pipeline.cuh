// cuasync/pipeline.cuh — an N-stage producer/consumer pipeline over pairs of mbarriers in shared
// memory: full[s] (the stage holds data) and empty[s] (the stage may be refilled).
//   producer: acquire (wait empty) -> fill -> commit (arrive on full, or let the copy complete it)
//   consumer: wait (wait full) -> use -> release (arrive on empty)
// Each side walks the ring with a stage_state; the producer starts on the opposite phase, so its
// first pass finds every fresh stage free. Unified form: every thread produces and consumes
// (producers == consumers == block size). Partitioned form: producer warps and consumer warps.
#pragma once

#include <cuasync/mbarrier.cuh>
#include <cuasync/cp_async.cuh>
#include <cuasync/bulk.cuh>

namespace cuasync {

// Where a ring of Stages barriers stands: the stage index and the parity of the phase to wait
// for there, flipped each time the index wraps. A consumer starts at phase 0; a producer waiting
// for empty slots starts at phase 1, so its first pass finds every (fresh) slot already free.
template <int Stages>
struct stage_state {
    static_assert(Stages >= 1, "cuasync: a ring needs at least one stage");
    int index;
    unsigned phase;
    __device__ static stage_state consumer_start() { return stage_state{0, 0u}; }
    __device__ static stage_state producer_start() { return stage_state{0, 1u}; }
    // The state `n` steps from the start (iteration n of a loop that began at `start`).
    __device__ static stage_state at(unsigned long long n, unsigned start_phase = 0u)
    {
        return stage_state{(int)(n % Stages), start_phase ^ (unsigned)((n / Stages) & 1u)};
    }
    __device__ void advance()
    {
        if (++index == Stages) { index = 0; phase ^= 1u; }
    }
    // n steps at once: the index moves n mod Stages, the phase flips once per wrap.
    __device__ void advance(unsigned n)
    {
        const unsigned next = (unsigned)index + n;
        phase ^= (next / Stages) & 1u;
        index = (int)(next % Stages);
    }
};

template <int Stages>
struct pipeline {
    static_assert(Stages >= 1 && Stages <= 64, "cuasync: a pipeline has 1..64 stages");
    mbarrier_t full[Stages];
    mbarrier_t empty[Stages];
    typedef stage_state<Stages> state;

    // One thread, before any use (then a block barrier): full expects one arrival per producer
    // (a bulk/TMA producer arrives once, with expect_tx), empty one per consumer.
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

    // Producer: wait until the stage at st is free.
    __device__ void producer_acquire(const state &st) { wait(&empty[st.index], st.phase); }

    // Producer, cp.async form: this thread's copies issued since acquire count as its arrival
    // on full once they land (cp.async.mbarrier.arrive.noinc).
    __device__ void producer_commit_cp_async(const state &st) { cp_async::mbarrier_arrive_noinc(&full[st.index]); }

    // Producer, plain form: data written with ordinary stores; arrive (release) on full.
    __device__ void producer_commit(const state &st) { mbarrier::arrive(&full[st.index]); }

#if __CUDA_ARCH__ >= 900
    // Producer, bulk/TMA form (one thread): announce the bytes the copies will complete_tx, and
    // arrive. The copies are then issued on full_barrier(st).
    __device__ void producer_expect(const state &st, unsigned tx_bytes) { mbarrier::arrive_expect_tx(&full[st.index], tx_bytes); }
#endif

    __device__ mbarrier_t *full_barrier(const state &st) { return &full[st.index]; }

    // Consumer: wait until the stage at st holds data.
    __device__ void consumer_wait(const state &st) { wait(&full[st.index], st.phase); }

    // Consumer: done reading the stage at st.
    __device__ void consumer_release(const state &st) { mbarrier::arrive(&empty[st.index]); }

private:
    __device__ static void wait(mbarrier_t *bar, unsigned parity) { mbarrier::wait_parity(bar, parity); }
};

} // namespace cuasync
