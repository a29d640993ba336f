// mbarrier_model.cu — ground truth for the CPU mbarrier model (lua/cuasync/model/mbarrier.lua):
// each thread runs one sequence of operations on its own barrier and, after every operation,
// records what the hardware reports: test_wait.parity for both parities, test_wait on every token
// taken so far, the pending count read from the token the operation returned, and the raw
// barrier word (for the message when a prediction fails).
// ops[(seq * MAX_OPS + k) * 3 + {0, 1, 2}] = { code, bytes, n }; code 0 ends the sequence.
// OP_CP_ASYNC_NOINC: a 4-byte cp.async, then cp.async.mbarrier.arrive.noinc, then wait_all; the
// thread then waits (bounded) until the arrival has landed, i.e. until the barrier word changed,
// so that what follows observes it. On the H200 about 1% of these left the word unchanged until
// the bound ran out, some with the phase already moved on as test_wait shows (the raw word is no
// reliable view of the state; unexplained, spec/model/mbarrier_model_spec.lua): then bit 31 of the
// observation is set and the sequence ends there (what follows could not be predicted).
#include <cuasync/mbarrier.cuh>
#include <cuasync/cp_async.cuh>

#ifndef MAX_OPS
#define MAX_OPS 24
#endif
static_assert(MAX_OPS <= 30, "test_wait results of every token must fit one 32-bit word");

enum { OP_END = 0, OP_ARRIVE = 1, OP_ARRIVE_DROP = 2, OP_EXPECT_TX = 3, OP_COMPLETE_TX = 4, OP_ARRIVE_EXPECT_TX = 5,
       OP_CP_ASYNC_NOINC = 6 };

extern "C" __global__ void __launch_bounds__(128) mbarrier_model(const unsigned *ops, const unsigned *counts,
    unsigned sequences, unsigned *obs, unsigned *pend, unsigned long long *raw)
{
    namespace mb = cuasync::mbarrier;
    __shared__ cuasync::mbarrier_t bars[128];
    __shared__ unsigned slots[128];
    const unsigned seq = blockIdx.x * blockDim.x + threadIdx.x;
    if (seq >= sequences) return;
    cuasync::mbarrier_t *b = &bars[threadIdx.x];
    mb::init(b, counts[seq]);
    unsigned long long tokens[MAX_OPS];
    int ntok = 0;
    for (int k = 0; k < MAX_OPS; ++k) {
        const unsigned *op = ops + ((size_t)seq * MAX_OPS + k) * 3;
        const unsigned code = op[0], bytes = op[1], n = op[2];
        const size_t at = (size_t)seq * MAX_OPS + k;
        if (code == OP_END) break;
        unsigned p = 0xFFFFFFFFu;
        unsigned long long tok = 0;
        bool has_token = true, late = false;
        switch (code) {
        case OP_CP_ASYNC_NOINC: {
            volatile unsigned long long *word = reinterpret_cast<volatile unsigned long long *>(b);
            const unsigned long long before = *word;
            cuasync::cp_async::copy_ca<4>(&slots[threadIdx.x], op);
            cuasync::cp_async::mbarrier_arrive_noinc(b);
            cuasync::cp_async::wait_all();
            unsigned spins = 0;
            while (*word == before && ++spins < (1u << 20)) __nanosleep(64);
            late = *word == before;
            has_token = false;
            break;
        }
        case OP_ARRIVE: tok = n == 1 ? mb::arrive(b) : mb::arrive(b, n); break;
        case OP_ARRIVE_DROP: tok = n == 1 ? mb::arrive_drop(b) : mb::arrive_drop(b, n); break;
        case OP_EXPECT_TX: mb::expect_tx(b, bytes); has_token = false; break;
        case OP_COMPLETE_TX: mb::complete_tx(b, bytes); has_token = false; break;
        default:   // OP_ARRIVE_EXPECT_TX; PTX has no count form: expect_tx, then n arrivals
            if (n == 1) tok = mb::arrive_expect_tx(b, bytes);
            else { mb::expect_tx(b, bytes); tok = mb::arrive(b, n); }
        }
        if (has_token) {
            tokens[ntok++] = tok;
            p = mb::pending_count(tok);
        }
        unsigned w = (mb::test_wait_parity(b, 0) ? 1u : 0u) | (mb::test_wait_parity(b, 1) ? 2u : 0u);
        for (int j = 0; j < ntok; ++j)
            if (mb::test_wait(b, tokens[j])) w |= 4u << j;
        obs[at] = w | (late ? 0x80000000u : 0u);
        pend[at] = p;
        raw[at] = *reinterpret_cast<volatile unsigned long long *>(b);
        if (late) break;
    }
}
