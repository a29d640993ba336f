// watchdog_canary.cu — what happens when a block exits (PTX `exit`, as the watchdog leaves) while
// bulk copies are still landing in its shared memory. canary_issue: thread 0 starts `chunks`
// bulk copies of `chunk` bytes into shared memory and exits at once (or after grace_ns). Then
// canary_check, launched right after on the same SMs, fills its shared memory with a pattern,
// waits, and counts the 4-byte words that changed: a copy landing after its block exited would
// overwrite them (or the launch would fail).
#include <cuasync/mbarrier.cuh>
#include <cuasync/bulk.cuh>
#include <cuasync/watchdog.cuh>

extern "C" __global__ void canary_issue(const unsigned char *src, unsigned chunk, unsigned chunks, unsigned grace_ns)
{
    extern __shared__ __align__(128) unsigned char smem[];
    __shared__ cuasync::mbarrier_t bar;
    if (threadIdx.x != 0) return;
    cuasync::mbarrier::init(&bar, 1);
    cuasync::mbarrier::fence_init();
    cuasync::mbarrier::arrive_expect_tx(&bar, chunk * chunks);
    for (unsigned j = 0; j < chunks; ++j)
        cuasync::bulk::load(smem + j * chunk, src + ((size_t)blockIdx.x * chunks + j) * chunk, chunk, &bar);
    cuasync::watchdog::pause_ns(grace_ns);
    cuasync::watchdog::exit_thread();
}

extern "C" __global__ void canary_check(unsigned words, unsigned wait_ns, unsigned *bad)
{
    extern __shared__ __align__(128) unsigned smem_words[];
    const unsigned key = 0x9E3779B9u * (blockIdx.x + 1u);
    for (unsigned i = threadIdx.x; i < words; i += blockDim.x) smem_words[i] = key ^ i;
    __syncthreads();
    cuasync::watchdog::pause_ns(wait_ns);
    __syncthreads();
    unsigned changed = 0;
    for (unsigned i = threadIdx.x; i < words; i += blockDim.x) changed += smem_words[i] != (key ^ i);
    if (changed) atomicAdd(bad, changed);
}
