// cluster.cu — thread-block clusters and distributed shared memory (cuasync/cluster.cuh):
//   cluster_where      each block writes where it sits: rank, size, ctaid, nctaid, clusterid,
//                      nclusterid, is_cluster_launch (13 words per block, thread 0)
//   cluster_histogram  a histogram whose nbins (a power of two) are spread over the shared
//                      memory of the cluster's blocks: every thread adds into the owning
//                      block's bins (red.shared::cluster), then each block adds its bins to hist
//   global_histogram   the same with one global atomic per value (the baseline)
//   cluster_ring       S - 1 rounds of passing a token to the next block of the cluster through
//                      its shared memory, the split barrier (arrive, local work, wait) around each:
//                      out[2b] = sum of every block's token (an all-reduce), out[2b+1] = the
//                      block's local work (the sum of its chunk of in)
//   cluster_multicast_check  rank 0 multicasts one 2D box into every block; each block compares
//                      its copy with global memory itself: bad[b] = mismatches, sums[b] = its sum;
//                      then each block arrives on rank 0's `done` barrier (the remote arrive a
//                      multicast pipeline releases a stage with): released[cluster] = 1 once
//                      all of them did (0 if they did not within about a second)
#include <cuasync/mbarrier.cuh>
#include <cuasync/cluster.cuh>
#include <cuasync/tma.cuh>

namespace cl = cuasync::cluster;

extern "C" __global__ void cluster_where(unsigned *out)
{
    if (threadIdx.x != 0) return;
    const unsigned b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    const cl::dim c = cl::ctaid(), n = cl::nctaid(), id = cl::id(), ids = cl::count();
    unsigned *o = out + 13 * b;
    o[0] = cl::rank(); o[1] = cl::size();
    o[2] = c.x; o[3] = c.y; o[4] = c.z; o[5] = n.x; o[6] = n.y; o[7] = n.z;
    o[8] = id.x; o[9] = id.y; o[10] = id.z;
    o[11] = ids.x * ids.y * ids.z; o[12] = cl::is_cluster_launch();
}

extern "C" __global__ void cluster_histogram(const unsigned *data, unsigned long long n, unsigned *hist, unsigned nbins)
{
    extern __shared__ unsigned bins[];                 // nbins / cluster size
    __shared__ unsigned base[16];                      // each block's bins as shared::cluster addresses
    const unsigned csize = cl::size(), rank = cl::rank(), per = nbins / csize;
    for (unsigned i = threadIdx.x; i < per; i += blockDim.x) bins[i] = 0;
    if (threadIdx.x < csize) base[threadIdx.x] = cl::map_shared_addr(bins, threadIdx.x);
    cl::sync();                                        // every block's bins are zero before any add
    const unsigned mask = nbins - 1;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        const unsigned bin = data[i] & mask;
        cl::red_add_u32(base[bin / per] + (bin % per) * 4, 1);
    }
    cl::sync();                                        // every add has landed; no block leaves early
    for (unsigned i = threadIdx.x; i < per; i += blockDim.x)
        if (bins[i]) atomicAdd(&hist[rank * per + i], bins[i]);
}

extern "C" __global__ void global_histogram(const unsigned *data, unsigned long long n, unsigned *hist, unsigned nbins)
{
    const unsigned mask = nbins - 1;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x)
        atomicAdd(&hist[data[i] & mask], 1u);
}

extern "C" __global__ void cluster_ring(const unsigned *tokens, const unsigned *in, unsigned per_block, unsigned *out)
{
    __shared__ unsigned slot[2];                       // written by the previous block of the ring
    __shared__ unsigned local;
    const unsigned csize = cl::size(), rank = cl::rank(), b = blockIdx.x;
    const unsigned next = (rank + 1) % csize;
    if (threadIdx.x == 0) local = 0;
    unsigned token = tokens[b], total = token;
    const unsigned next_slot = cl::map_shared_addr(slot, next);
    cl::sync();                                        // `local` is zero before any block adds to it
    const unsigned *chunk = in + (unsigned long long)b * per_block;
    const unsigned slice = (per_block + csize - 2) / (csize > 1 ? csize - 1 : 1);
    for (unsigned round = 0; round + 1 < csize; ++round) {
        if (threadIdx.x == 0) cl::store_u32(next_slot + 4 * (round % 2), token);
        cl::arrive();                                  // release the token to the next block
        unsigned sum = 0;                              // local work while the others catch up
        for (unsigned i = round * slice + threadIdx.x; i < (round + 1) * slice && i < per_block; i += blockDim.x)
            sum += chunk[i];
        atomicAdd(&local, sum);
        cl::wait();                                    // the previous block's token has arrived
        token = slot[round % 2];
        total += token;
    }
    if (csize == 1)
        for (unsigned i = threadIdx.x; i < per_block; i += blockDim.x) atomicAdd(&local, chunk[i]);
    __syncthreads();
    if (threadIdx.x == 0) { out[2 * b] = total; out[2 * b + 1] = local; }
    cl::sync();                                        // nobody writes into a block that has left
}

extern "C" __global__ void cluster_multicast_check(const __grid_constant__ cuasync::tensormap map, const unsigned *g,
    unsigned W, unsigned H, unsigned b0, unsigned b1, unsigned n0, unsigned *sums, unsigned *bad, unsigned *released)
{
    extern __shared__ __align__(1024) unsigned tile[];
    __shared__ cuasync::mbarrier_t bar, done;
    __shared__ unsigned sum, wrong;
    namespace mb = cuasync::mbarrier;
    const unsigned csize = cl::size(), rank = cl::rank(), ci = blockIdx.x / csize;
    const int x0 = (int)((ci % n0) * b0), y0 = (int)((ci / n0) * b1);
    if (threadIdx.x == 0) {
        sum = 0; wrong = 0;
        mb::init(&bar, 1);
        mb::init(&done, csize);                        // only rank 0's is used: one arrival per block
        mb::fence_init();
    }
    cl::sync();                                        // every block's barrier exists before the copy
    if (threadIdx.x == 0) {
        mb::arrive_expect_tx(&bar, b0 * b1 * 4);       // each block expects the whole box
        if (rank == 0) cuasync::tma::load_multicast(tile, &map, &bar, (unsigned short)((1u << csize) - 1), x0, y0);
    }
    __syncthreads();
    mb::wait_parity(&bar, 0);
    unsigned s = 0, w = 0;
    for (unsigned k = threadIdx.x; k < b0 * b1; k += blockDim.x) {
        const unsigned x = x0 + k % b0, y = y0 + k / b0;
        const unsigned want = (x < W && y < H) ? g[(unsigned long long)y * W + x] : 0;
        s += tile[k];
        w += tile[k] != want;
    }
    atomicAdd(&sum, s);
    atomicAdd(&wrong, w);
    __syncthreads();
    if (threadIdx.x == 0) {
        sums[blockIdx.x] = sum; bad[blockIdx.x] = wrong;
        cl::arrive_remote(&done, 0);                   // this block is done with its copy
        if (rank == 0) {
            released[ci] = mb::wait_parity_bounded(&done, 0, 100000);
        }
    }
    cl::sync();                                        // no block leaves while a copy may still land
}
