// cuasync/cluster.cuh — thread-block clusters: where this block sits in its cluster, the
// cluster-wide barrier (whole, or split into arrive and wait so that local work overlaps it),
// and distributed shared memory: another block's shared memory, mapped (mapa) and then loaded,
// stored or updated atomically. A block must not exit while another block of its cluster may
// still touch its shared memory: end with sync() (or arrive + wait). And a plan's peers: which
// blocks a multicast load ties together (multicast masks, slices, whom a release signals).
#pragma once

#include <cuasync/arch.cuh>       // CUASYNC_NEEDS_SM90, smem_addr
#include <cuasync/mbarrier.cuh>   // arrive_remote wraps mbarrier::arrive_cluster

namespace cuasync {
namespace cluster {

struct dim { unsigned x, y, z; };

#if __CUDA_ARCH__ >= 900
#define CUASYNC_SREG(fn, reg)                                              \
    __device__ __forceinline__ unsigned fn()                               \
    {                                                                      \
        unsigned r;                                                        \
        asm volatile("mov.u32 %0, %%" reg ";" : "=r"(r));                  \
        return r;                                                          \
    }
// mov.u32 r, %cluster_ctarank;                                        // PTX ISA 7.8, sm_90
CUASYNC_SREG(rank, "cluster_ctarank")
// mov.u32 r, %cluster_nctarank;                                       // PTX ISA 7.8, sm_90
CUASYNC_SREG(size, "cluster_nctarank")
#undef CUASYNC_SREG

#define CUASYNC_SREG3(fn, reg)                                             \
    __device__ __forceinline__ dim fn()                                    \
    {                                                                      \
        dim d;                                                             \
        asm volatile("mov.u32 %0, %%" reg ".x;\n\tmov.u32 %1, %%" reg ".y;\n\tmov.u32 %2, %%" reg ".z;" \
                     : "=r"(d.x), "=r"(d.y), "=r"(d.z));                   \
        return d;                                                          \
    }
// mov.u32 r, %cluster_ctaid.{x,y,z};   this block's position in its cluster   PTX ISA 7.8, sm_90
CUASYNC_SREG3(ctaid, "cluster_ctaid")
// mov.u32 r, %cluster_nctaid.{x,y,z};  the cluster's shape in blocks          PTX ISA 7.8, sm_90
CUASYNC_SREG3(nctaid, "cluster_nctaid")
// mov.u32 r, %clusterid.{x,y,z};       this cluster's position in the grid    PTX ISA 7.8, sm_90
CUASYNC_SREG3(id, "clusterid")
// mov.u32 r, %nclusterid.{x,y,z};      the grid's shape in clusters           PTX ISA 7.8, sm_90
CUASYNC_SREG3(count, "nclusterid")
#undef CUASYNC_SREG3

// mov.pred p, %is_explicit_cluster;                                   // PTX ISA 7.8, sm_90
// True when the launch gave cluster dims (every sm_90 launch is a cluster of 1 otherwise).
__device__ __forceinline__ bool is_cluster_launch()
{
    unsigned r;
    asm volatile("{\n\t.reg .pred p;\n\tmov.pred p, %%is_explicit_cluster;\n\tselp.u32 %0, 1, 0, p;\n\t}" : "=r"(r));
    return r != 0;
}

// barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned;   PTX ISA 8.0, sm_90
// Every thread of every block of the cluster; orders shared-memory writes (barrier inits
// included) before any block of the cluster reads them or copies into them.
__device__ __forceinline__ void sync()
{
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// barrier.cluster.arrive.release;                                     // PTX ISA 8.0, sm_90
// The first half of sync(): this thread's earlier writes are released to whoever waits.
__device__ __forceinline__ void arrive()
{
    asm volatile("barrier.cluster.arrive.release;" ::: "memory");
}

// barrier.cluster.arrive.relaxed;                                     // PTX ISA 8.0, sm_90
// Arrive without ordering this thread's writes (only the rendezvous itself is needed).
__device__ __forceinline__ void arrive_relaxed()
{
    asm volatile("barrier.cluster.arrive.relaxed;" ::: "memory");
}

// barrier.cluster.wait.acquire;                                       // PTX ISA 8.0, sm_90
// The second half: returns once every thread of the cluster has arrived; what they released
// is visible.
__device__ __forceinline__ void wait()
{
    asm volatile("barrier.cluster.wait.acquire;" ::: "memory");
}

// mapa.u64 d, a, cta;                                                 // PTX ISA 7.8, sm_90
// The generic address of the same shared-memory object in block `cta_rank` of this cluster:
// ordinary loads, stores and atomics through it reach that block's shared memory.
template <typename T>
__device__ __forceinline__ T *map_shared_rank(T *p, unsigned cta_rank)
{
    unsigned long long r;
    asm volatile("mapa.u64 %0, %1, %2;" : "=l"(r) : "l"(p), "r"(cta_rank));
    return (T *)r;
}

// mapa.shared::cluster.u32 d, a, cta;                                 // PTX ISA 7.8, sm_90
// The same, as a 32-bit shared::cluster address for the explicit operations below.
__device__ __forceinline__ unsigned map_shared_addr(const void *p, unsigned cta_rank)
{
    unsigned r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(smem_addr(p)), "r"(cta_rank));
    return r;
}

// ld.shared::cluster.u32 v, [a];                                      // PTX ISA 7.8, sm_90
__device__ __forceinline__ unsigned load_u32(unsigned cluster_addr)
{
    unsigned v;
    asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(v) : "r"(cluster_addr) : "memory");
    return v;
}

// st.shared::cluster.u32 [a], v;                                      // PTX ISA 7.8, sm_90
__device__ __forceinline__ void store_u32(unsigned cluster_addr, unsigned v)
{
    asm volatile("st.shared::cluster.u32 [%0], %1;" :: "r"(cluster_addr), "r"(v) : "memory");
}

// atom.relaxed.cluster.shared::cluster.add.u32 old, [a], v;           // PTX ISA 7.8, sm_90
__device__ __forceinline__ unsigned atomic_add_u32(unsigned cluster_addr, unsigned v)
{
    unsigned old;
    asm volatile("atom.relaxed.cluster.shared::cluster.add.u32 %0, [%1], %2;"
                 : "=r"(old) : "r"(cluster_addr), "r"(v) : "memory");
    return old;
}

// red.relaxed.cluster.shared::cluster.add.u32 [a], v;                 // PTX ISA 7.8, sm_90
// The atomic add when the old value is not needed (no round trip back to this thread).
__device__ __forceinline__ void red_add_u32(unsigned cluster_addr, unsigned v)
{
    asm volatile("red.relaxed.cluster.shared::cluster.add.u32 [%0], %1;" :: "r"(cluster_addr), "r"(v) : "memory");
}

// mapa + mbarrier.arrive.release.cluster.shared::cluster.b64 (mbarrier.cuh)   PTX ISA 8.0, sm_90
// Arrive on the barrier at the same offset in block cta_rank: a consumer in one block releasing
// a stage that a multicast from another block fills.
__device__ __forceinline__ void arrive_remote(mbarrier_t *bar, unsigned cta_rank)
{
    mbarrier::arrive_cluster(bar, cta_rank);
}

// A plan's peers. Config is a cuasync.pipeline plan's generated config (cluster_x, cluster_y,
// cluster_size, loads, load_multicast[l]: 0 for a load that is not multicast, else the dimension
// its line of blocks runs along, 1 x, 2 y, 3 z). This block's peers are itself and the blocks
// on the line of any multicast load: their copies land in its stages, so pipeline<Config>'s
// consumers release each stage to all of them.

// Does block r differ from this block only along dimension d (1 x, 2 y, 3 z)?
template <class Config>
__device__ __forceinline__ bool same_line(unsigned r, unsigned d)
{
    const dim me = ctaid();
    const unsigned x = r % Config::cluster_x, y = (r / Config::cluster_x) % Config::cluster_y,
                   z = r / (Config::cluster_x * Config::cluster_y);
    return (d == 1 || x == me.x) && (d == 2 || y == me.y) && (d == 3 || z == me.z);
}

// Is block r (a cluster rank) one of this block's peers?
template <class Config>
__device__ __forceinline__ bool is_peer(unsigned r)
{
    if (r == rank()) return true;
    for (int l = 0; l < Config::loads; ++l)
        if (Config::load_multicast[l] != 0 && same_line<Config>(r, Config::load_multicast[l])) return true;
    return false;
}

// The cluster rank of this block's k-th peer (in rank order, this block among them; k below
// Config::peer_count).
template <class Config>
__device__ __forceinline__ unsigned peer_rank(unsigned k)
{
    // every block of the cluster a peer (a cluster of 2 sharing a load): the k-th is rank k, with
    // no walk over the ranks, whose special-register reads sat between each wgmma wait and its
    // release (64 SASS instructions a release in the GEMM's cluster of 2)
    if (Config::peer_count == Config::cluster_size) return k;
    unsigned r = 0;
    for (; r < Config::cluster_size; ++r)
        if (is_peer<Config>(r) && k-- == 0) break;
    return r;
}

// The blocks of this block's multicast line for load l (bit r: cluster rank r; this block
// alone for a load that is not multicast): a multicast copy's cta mask.
template <class Config>
__device__ __forceinline__ unsigned short multicast_mask(int l)
{
    const unsigned d = Config::load_multicast[l];
    if (d == 0) return (unsigned short)(1u << rank());
    unsigned short m = 0;
    for (unsigned r = 0; r < Config::cluster_size; ++r)
        if (same_line<Config>(r, d)) m |= (unsigned short)(1u << r);
    return m;
}

// This block's position along load l's multicast line: which slice of the load it issues.
template <class Config>
__device__ __forceinline__ unsigned slice_index(int l)
{
    const unsigned d = Config::load_multicast[l];
    const dim c = ctaid();
    return d == 1 ? c.x : d == 2 ? c.y : d == 3 ? c.z : 0u;
}
#else
CUASYNC_REFUSE("", rank, CUASYNC_SM90)
CUASYNC_REFUSE("", size, CUASYNC_SM90)
CUASYNC_REFUSE("", ctaid, CUASYNC_SM90)
CUASYNC_REFUSE("", nctaid, CUASYNC_SM90)
CUASYNC_REFUSE("", id, CUASYNC_SM90)
CUASYNC_REFUSE("", count, CUASYNC_SM90)
CUASYNC_REFUSE("", is_cluster_launch, CUASYNC_SM90)
CUASYNC_REFUSE("", sync, CUASYNC_SM90)
CUASYNC_REFUSE("", arrive, CUASYNC_SM90)
CUASYNC_REFUSE("", arrive_relaxed, CUASYNC_SM90)
CUASYNC_REFUSE("", wait, CUASYNC_SM90)
CUASYNC_REFUSE("", map_shared_rank, CUASYNC_SM90)
CUASYNC_REFUSE("", map_shared_addr, CUASYNC_SM90)
CUASYNC_REFUSE("", load_u32, CUASYNC_SM90)
CUASYNC_REFUSE("", store_u32, CUASYNC_SM90)
CUASYNC_REFUSE("", atomic_add_u32, CUASYNC_SM90)
CUASYNC_REFUSE("", red_add_u32, CUASYNC_SM90)
CUASYNC_REFUSE("", arrive_remote, CUASYNC_SM90)
CUASYNC_REFUSE_T(class Config, "", same_line, CUASYNC_SM90)
CUASYNC_REFUSE_T(class Config, "", is_peer, CUASYNC_SM90)
CUASYNC_REFUSE_T(class Config, "", peer_rank, CUASYNC_SM90)
CUASYNC_REFUSE_T(class Config, "", multicast_mask, CUASYNC_SM90)
CUASYNC_REFUSE_T(class Config, "", slice_index, CUASYNC_SM90)
#endif

} // namespace cluster
} // namespace cuasync
