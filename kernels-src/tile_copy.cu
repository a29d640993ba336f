// tile_copy.cu — a 2D tiled copy of a matrix through shared memory with tensor copies: a ring of
// STAGES boxes, one mbarrier per stage; one thread per block drives the TMA unit: a 2D tensor
// load into stage s (complete_tx on its barrier), then a 2D tensor store of that stage through the
// output map (bulk groups); a stage is refilled once the store that read it has finished reading
// (wait_group.read). Both maps share the box and the swizzle, so the store undoes what the load
// did. Blocks take tiles round-robin; tile t is box (t % tiles_x, t / tiles_x).
#include <cuasync/mbarrier.cuh>
#include <cuasync/ring.cuh>       // stage_state
#include <cuasync/bulk.cuh>
#include <cuasync/tma.cuh>

#ifndef STAGES
#define STAGES 8
#endif
// Bytes between stages: the box bytes rounded up to the 1024-byte alignment the 128B swizzle needs.
#ifndef STAGE_BYTES
#define STAGE_BYTES 4096
#endif
static_assert(STAGES >= 2 && STAGES <= 64, "STAGES must be 2..64");
static_assert(STAGE_BYTES % 1024 == 0, "STAGE_BYTES must be a multiple of 1024");

extern "C" __global__ void __launch_bounds__(32) tile_copy(const __grid_constant__ cuasync::tensormap in,
    const __grid_constant__ cuasync::tensormap out, unsigned tiles_x, unsigned tiles, unsigned box_bytes,
    unsigned box_x, unsigned box_y)
{
    extern __shared__ __align__(1024) unsigned char ring[];   // STAGES * STAGE_BYTES
    __shared__ cuasync::mbarrier_t full[STAGES];
    namespace mb = cuasync::mbarrier;
    namespace bulk = cuasync::bulk;
    namespace tma = cuasync::tma;

    if (threadIdx.x != 0 || blockIdx.x >= tiles) return;
    const unsigned n = (tiles - blockIdx.x + gridDim.x - 1) / gridDim.x;   // tiles of this block
    tma::prefetch_map(&in);
    tma::prefetch_map(&out);
    for (int s = 0; s < STAGES; ++s) mb::init(&full[s], 1);
    mb::fence_init();

    auto x_of = [&](unsigned i) { return (int)(((blockIdx.x + i * gridDim.x) % tiles_x) * box_x); };
    auto y_of = [&](unsigned i) { return (int)(((blockIdx.x + i * gridDim.x) / tiles_x) * box_y); };
    auto issue_load = [&](unsigned i) {
        const int s = (int)(i % STAGES);
        mb::arrive_expect_tx(&full[s], box_bytes);
        tma::load(ring + (size_t)s * STAGE_BYTES, &in, &full[s], x_of(i), y_of(i));
    };

    for (unsigned i = 0; i < n && i < STAGES; ++i) issue_load(i);
    auto st = cuasync::stage_state<STAGES>::consumer_start();
    for (unsigned i = 0; i < n; ++i, st.advance()) {
        const int s = st.index;
        mb::wait_parity(&full[s], st.phase);
        tma::store(&out, ring + (size_t)s * STAGE_BYTES, x_of(i), y_of(i));
        bulk::commit_group();
        // refill the stage of the previous store once it has read its stage
        if (i >= 1 && i - 1 + STAGES < n) {
            bulk::wait_group_read<1>();
            issue_load(i - 1 + STAGES);
        }
    }
    bulk::wait_group<0>();   // every write to global memory is done before the block exits
}
