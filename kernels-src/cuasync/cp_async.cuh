// cuasync/cp_async.cuh — Ampere's per-thread asynchronous copy, cp.async (LDGSTS): 4, 8 or 16
// bytes from global to shared memory without passing through registers. Completion is tracked
// per thread by commit/wait groups, or handed to an mbarrier (cp.async.mbarrier.arrive).
// Addresses must be aligned to the copy size. .ca caches in L1 and L2 (4, 8, 16 bytes); .cg in
// L2 only (16 bytes).
#pragma once

#include <cuasync/mbarrier.cuh>

namespace cuasync {
namespace cp_async {

template <int Bytes>
struct ca_size_ok { static constexpr bool value = Bytes == 4 || Bytes == 8 || Bytes == 16; };

// cp.async.ca.shared.global [dst], [src], Bytes;                       // PTX ISA 7.0, sm_80
template <int Bytes>
__device__ __forceinline__ void copy_ca(void *smem_dst, const void *gmem_src)
{
    static_assert(ca_size_ok<Bytes>::value, "cuasync: cp.async.ca copies 4, 8 or 16 bytes");
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;"
                 :: "r"(smem_addr(smem_dst)), "l"(gmem_src), "n"(Bytes) : "memory");
}

// cp.async.cg.shared.global [dst], [src], 16;                          // PTX ISA 7.0, sm_80
__device__ __forceinline__ void copy_cg(void *smem_dst, const void *gmem_src)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;"
                 :: "r"(smem_addr(smem_dst)), "l"(gmem_src) : "memory");
}

// cp.async.ca.shared.global [dst], [src], Bytes, src_bytes;            // PTX ISA 7.0, sm_80
// Zero-fill: reads src_bytes (0..Bytes) and writes zeros to the rest of the Bytes in shared.
template <int Bytes>
__device__ __forceinline__ void copy_ca_zfill(void *smem_dst, const void *gmem_src, unsigned src_bytes)
{
    static_assert(ca_size_ok<Bytes>::value, "cuasync: cp.async.ca copies 4, 8 or 16 bytes");
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;"
                 :: "r"(smem_addr(smem_dst)), "l"(gmem_src), "n"(Bytes), "r"(src_bytes) : "memory");
}

// cp.async.cg.shared.global [dst], [src], 16, src_bytes;               // PTX ISA 7.0, sm_80
__device__ __forceinline__ void copy_cg_zfill(void *smem_dst, const void *gmem_src, unsigned src_bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"
                 :: "r"(smem_addr(smem_dst)), "l"(gmem_src), "r"(src_bytes) : "memory");
}

// cp.async.ca.shared.global [dst], [src], Bytes, ignore_src;           // PTX ISA 7.5, sm_80
// With ignore_src true nothing is read and the Bytes in shared memory become zero.
template <int Bytes>
__device__ __forceinline__ void copy_ca_ignore(void *smem_dst, const void *gmem_src, bool ignore_src)
{
    static_assert(ca_size_ok<Bytes>::value, "cuasync: cp.async.ca copies 4, 8 or 16 bytes");
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.u32 p, %3, 0;\n\t"
                 "cp.async.ca.shared.global [%0], [%1], %2, p;\n\t}"
                 :: "r"(smem_addr(smem_dst)), "l"(gmem_src), "n"(Bytes), "r"((unsigned)ignore_src) : "memory");
}

// cp.async.cg.shared.global.L2::<Prefetch>B [dst], [src], 16;          // PTX ISA 7.4, sm_80
// Also brings the surrounding Prefetch (64, 128 or 256) bytes into L2: a hint.
template <int Prefetch>
__device__ __forceinline__ void copy_cg_prefetch(void *smem_dst, const void *gmem_src)
{
    static_assert(Prefetch == 64 || Prefetch == 128 || Prefetch == 256,
                  "cuasync: the L2 prefetch size is 64, 128 or 256 bytes");
    if (Prefetch == 64)
        asm volatile("cp.async.cg.shared.global.L2::64B [%0], [%1], 16;" :: "r"(smem_addr(smem_dst)), "l"(gmem_src) : "memory");
    else if (Prefetch == 128)
        asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16;" :: "r"(smem_addr(smem_dst)), "l"(gmem_src) : "memory");
    else
        asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16;" :: "r"(smem_addr(smem_dst)), "l"(gmem_src) : "memory");
}

// cp.async.commit_group;                                               // PTX ISA 7.0, sm_80
// Closes the group of this thread's cp.async issued since the last commit.
__device__ __forceinline__ void commit_group()
{
    asm volatile("cp.async.commit_group;" ::: "memory");
}

// cp.async.wait_group N;                                               // PTX ISA 7.0, sm_80
// Until at most N of this thread's committed groups are pending. Other threads' copies need a
// barrier (__syncthreads) after the wait before they are read.
template <int N>
__device__ __forceinline__ void wait_group()
{
    asm volatile("cp.async.wait_group %0;" :: "n"(N) : "memory");
}

// cp.async.wait_all;                                                   // PTX ISA 7.0, sm_80
__device__ __forceinline__ void wait_all()
{
    asm volatile("cp.async.wait_all;" ::: "memory");
}

// cp.async.mbarrier.arrive.shared::cta.b64 [bar];                      // PTX ISA 7.0, sm_80
// Once this thread's prior cp.async have completed, arrive on bar. The pending count is raised
// now and lowered then, so the thread still arrives itself as well (counted in the init count).
__device__ __forceinline__ void mbarrier_arrive(mbarrier_t *bar)
{
    asm volatile("cp.async.mbarrier.arrive.shared::cta.b64 [%0];" :: "r"(smem_addr(bar)) : "memory");
}

// cp.async.mbarrier.arrive.noinc.shared::cta.b64 [bar];                // PTX ISA 7.0, sm_80
// As above, but the completion is this thread's arrival: count it in the barrier's init count
// and do not arrive again.
__device__ __forceinline__ void mbarrier_arrive_noinc(mbarrier_t *bar)
{
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" :: "r"(smem_addr(bar)) : "memory");
}

} // namespace cp_async
} // namespace cuasync
