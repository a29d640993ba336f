// cuasync/wgmma.cuh — warpgroup MMA on sm_90a (PTX ISA "Asynchronous Warpgroup Level Matrix
// Multiply-Accumulate"): shared-memory matrix descriptors for the layouts TMA writes, wgmma.fence,
// wgmma.mma_async bf16 -> f32 (m64n64k16, m64n128k16, m64n176k16, m64n192k16, m64n256k16; A in
// registers with B MN-major: mma_rs_*_tb), commit_group / wait_group
// (setmaxnreg and the warpgroup barrier are in warpgroup.cuh, also reachable here as wgmma::setmaxnreg_*). A warpgroup is 4
// consecutive warps (128 threads); every wgmma instruction is executed by all of them.
// Compiled by NVRTC with no host headers. Needs the arch-specific target sm_90a.
#pragma once

#include <cuasync/arch.cuh>
#include <cuasync/warpgroup.cuh>   // setmaxnreg, named-barrier sync

#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ < 900 || !defined(__CUDA_ARCH_FEAT_SM90_ALL))
#define CUASYNC_WGMMA_UNAVAILABLE 1
#endif

namespace cuasync {
namespace wgmma {

using warpgroup::setmaxnreg_inc;
using warpgroup::setmaxnreg_dec;

// The 64-bit shared-memory matrix descriptor (PTX ISA "Matrix Descriptor Format"):
//   bits 0-13 start address >> 4, 16-29 leading-dimension byte offset >> 4, 32-45 stride-dimension
//   byte offset >> 4, 49-51 base offset (0: the tile starts on a swizzle repeat), 62-63 swizzle
//   (0 none, 1 128B, 2 64B, 3 32B).
enum swizzle_mode { SWIZZLE_NONE = 0, SWIZZLE_128B = 1, SWIZZLE_64B = 2, SWIZZLE_32B = 3 };

__device__ __forceinline__ unsigned long long desc_encode(unsigned smem_address, unsigned lbo_bytes, unsigned sbo_bytes,
                                                          unsigned swizzle)
{
    return (unsigned long long)((smem_address & 0x3FFFFu) >> 4)
         | ((unsigned long long)((lbo_bytes & 0x3FFFFu) >> 4) << 16)
         | ((unsigned long long)((sbo_bytes & 0x3FFFFu) >> 4) << 32)
         | ((unsigned long long)(swizzle & 3u) << 62);
}

// A K-major operand tile as a tensor map with the `span`-byte swizzle writes it: rows of `span`
// bytes (64 bf16 for 128B), 8-row groups `8 * span` bytes apart (the stride-dimension offset).
// The leading-dimension offset is not used by swizzled K-major layouts (1 by convention). The
// tile must start on the swizzle's repeat (8 spans): pipeline stage buffers do.
__device__ __forceinline__ unsigned long long desc_kmajor(const void *smem, unsigned swizzle_span)
{
    const unsigned mode = swizzle_span == 128u ? SWIZZLE_128B : swizzle_span == 64u ? SWIZZLE_64B : SWIZZLE_32B;
    return desc_encode(smem_addr(smem), 16u, 8u * swizzle_span, mode);
}

// The descriptor of the next 16-element k-block of the same tile: 32 bytes further along a row
// (inside the swizzle span; the hardware applies the swizzle to the address it computes).
__device__ __forceinline__ unsigned long long desc_advance(unsigned long long desc, unsigned bytes)
{
    return desc + (unsigned long long)(bytes >> 4);
}

// An MN-major operand (B of O += P V: the V tile, kv rows x d columns, row-major, as a tensor map
// with the 128B swizzle writes it in d / 64 column blocks of kv rows x 128 bytes). The PTX ISA's
// canonical MN-major SW128 layout: a swizzle atom is 8 K-rows of 128 bytes (64 MN elements);
// the leading-dimension offset is the distance between atoms along MN (`mn_block_bytes`: one
// column block of the tile to the next), the stride-dimension offset the distance between
// 8-row groups along K (8 x 128 bytes). The k16 step after this one starts 16 rows further:
// desc_advance(desc, 16 * 128).
__device__ __forceinline__ unsigned long long desc_mnmajor(const void *smem, unsigned mn_block_bytes)
{
    return desc_encode(smem_addr(smem), mn_block_bytes, 8u * 128u, SWIZZLE_128B);
}

#ifndef CUASYNC_WGMMA_UNAVAILABLE
// wgmma.fence.sync.aligned;                                            // PTX ISA 8.0, sm_90a
// Orders this warpgroup's register accesses (the accumulators) before the next wgmma.mma_async.
__device__ __forceinline__ void fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }

// wgmma.commit_group.sync.aligned;                                     // PTX ISA 8.0, sm_90a
__device__ __forceinline__ void commit_group() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }

// wgmma.wait_group.sync.aligned N;                                     // PTX ISA 8.0, sm_90a
// Wait until at most N committed groups of this warpgroup are pending (their shared-memory
// operands may be reused, their accumulators read).
template <int N>
__device__ __forceinline__ void wait_group() { asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(N) : "memory"); }

// wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 d, a-desc, b-desc, p, 1, 1, 0, 0;   // PTX ISA 8.0, sm_90a
// D (64 x 64, f32, 32 registers a thread) += A (64 x 16, shared memory) * B (64 x 16, shared memory), both
// K-major (no transpose); accumulate = false overwrites D (the first k-block of a tile).
__device__ __forceinline__ void mma_m64n64k16_bf16(float (&d)[32], unsigned long long a, unsigned long long b, bool accumulate)
{
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %34, 0;\n\t"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n\t}"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                 : "l"(a), "l"(b), "r"((unsigned)accumulate));
}

// wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 d, a-desc, b-desc, p, 1, 1, 0, 0;   // PTX ISA 8.0, sm_90a
// D (64 x 128, f32, 64 registers a thread) += A (64 x 16, shared memory) * B (128 x 16, shared memory), both
// K-major (no transpose); accumulate = false overwrites D (the first k-block of a tile).
__device__ __forceinline__ void mma_m64n128k16_bf16(float (&d)[64], unsigned long long a, unsigned long long b, bool accumulate)
{
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %66, 0;\n\t"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n\t}"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "l"(a), "l"(b), "r"((unsigned)accumulate));
}

// wgmma.mma_async.sync.aligned.m64n176k16.f32.bf16.bf16 d, a-desc, b-desc, p, 1, 1, 0, 0;   // PTX ISA 8.0, sm_90a
// D (64 x 176, f32, 88 registers a thread) += A (64 x 16, shared memory) * B (176 x 16, shared memory), both
// K-major (no transpose); accumulate = false overwrites D. N = 176: FlashAttention-3's kv tile at
// head dim 128 (attention's kv_tile = 176).
__device__ __forceinline__ void mma_m64n176k16_bf16(float (&d)[88], unsigned long long a, unsigned long long b, bool accumulate)
{
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %90, 0;\n\t"
                 "wgmma.mma_async.sync.aligned.m64n176k16.f32.bf16.bf16 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87}, %88, %89, p, 1, 1, 0, 0;\n\t}"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87])
                 : "l"(a), "l"(b), "r"((unsigned)accumulate));
}

// wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16 d, a-desc, b-desc, p, 1, 1, 0, 0;   // PTX ISA 8.0, sm_90a
// D (64 x 192, f32, 96 registers a thread) += A (64 x 16, shared memory) * B (192 x 16, shared memory), both
// K-major (no transpose); accumulate = false overwrites D. N = 192: the GEMM's 128x192 tile (its tile
// count on 132 SMs quantizes into fuller waves than 128x256's).
__device__ __forceinline__ void mma_m64n192k16_bf16(float (&d)[96], unsigned long long a, unsigned long long b, bool accumulate)
{
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %98, 0;\n\t"
                 "wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}, %96, %97, p, 1, 1, 0, 0;\n\t}"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
                 : "l"(a), "l"(b), "r"((unsigned)accumulate));
}

// wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 d, a-desc, b-desc, p, 1, 1, 0, 0;   // PTX ISA 8.0, sm_90a
// D (64 x 256, f32, 128 registers a thread) += A (64 x 16, shared memory) * B (256 x 16, shared memory), both
// K-major (no transpose); accumulate = false overwrites D (the first k-block of a tile).
__device__ __forceinline__ void mma_m64n256k16_bf16(float (&d)[128], unsigned long long a, unsigned long long b, bool accumulate)
{
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %130, 0;\n\t"
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, 1, 1, 0, 0;\n\t}"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
                 : "l"(a), "l"(b), "r"((unsigned)accumulate));
}


// cvt.rn.bf16x2.f32 d, hi, lo;                                          // PTX ISA 7.0, sm_80
// Two f32 to a bf16 pair (round to nearest even): lo in bits 0-15, hi in 16-31: the register
// form of an A fragment (the element of the lower column in the low half).
__device__ __forceinline__ unsigned pack_bf16x2(float lo, float hi)
{
    unsigned d;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
    return d;
}

// wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 d, {a0, a1, a2, a3}, b-desc, p, 1, 1, 1;   // PTX ISA 8.0, sm_90a
// D (64 x 64, f32, 32 registers a thread) += A (64 x 16, bf16 in registers: 4 x .b32 a thread, the
// m64nNk16 accumulator layout of its 16 columns, pack_bf16x2) * B (16 x 64 from shared memory,
// MN-major: imm-trans-b = 1, desc_mnmajor); accumulate = false overwrites D.
__device__ __forceinline__ void mma_rs_m64n64k16_bf16_tb(float (&d)[32], const unsigned (&a)[4], unsigned long long b, bool accumulate)
{
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %37, 0;\n\t"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n\t}"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"((unsigned)accumulate));
}

// wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 d, {a0, a1, a2, a3}, b-desc, p, 1, 1, 1;   // PTX ISA 8.0, sm_90a
// D (64 x 128, f32, 64 registers a thread) += A (64 x 16, bf16 in registers: 4 x .b32 a thread, the
// m64nNk16 accumulator layout of its 16 columns, pack_bf16x2) * B (16 x 128 from shared memory,
// MN-major: imm-trans-b = 1, desc_mnmajor); accumulate = false overwrites D.
__device__ __forceinline__ void mma_rs_m64n128k16_bf16_tb(float (&d)[64], const unsigned (&a)[4], unsigned long long b, bool accumulate)
{
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %69, 0;\n\t"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n\t}"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"((unsigned)accumulate));
}

#else
CUASYNC_REFUSE("wgmma::", fence, CUASYNC_SM90A)
CUASYNC_REFUSE("wgmma::", commit_group, CUASYNC_SM90A)
CUASYNC_REFUSE_T(int N, "wgmma::", wait_group, CUASYNC_SM90A)
CUASYNC_REFUSE("wgmma::", mma_m64n64k16_bf16, CUASYNC_SM90A)
CUASYNC_REFUSE("wgmma::", mma_m64n128k16_bf16, CUASYNC_SM90A)
CUASYNC_REFUSE("wgmma::", mma_m64n176k16_bf16, CUASYNC_SM90A)
CUASYNC_REFUSE("wgmma::", mma_m64n192k16_bf16, CUASYNC_SM90A)
CUASYNC_REFUSE("wgmma::", mma_m64n256k16_bf16, CUASYNC_SM90A)
CUASYNC_REFUSE("wgmma::", mma_rs_m64n64k16_bf16_tb, CUASYNC_SM90A)
CUASYNC_REFUSE("wgmma::", mma_rs_m64n128k16_bf16_tb, CUASYNC_SM90A)
CUASYNC_REFUSE("wgmma::", pack_bf16x2, CUASYNC_SM90A)
#endif

// The m64nNk16 MMA (A and B from shared memory) whose N the accumulators give: 32 registers a
// thread N = 64, 64 N = 128, 88 N = 176, 96 N = 192, 128 N = 256; a kernel whose tile width is a define calls one name.
__device__ __forceinline__ void mma_m64k16_bf16(float (&d)[32], unsigned long long a, unsigned long long b, bool accumulate)
{
    mma_m64n64k16_bf16(d, a, b, accumulate);
}
__device__ __forceinline__ void mma_m64k16_bf16(float (&d)[64], unsigned long long a, unsigned long long b, bool accumulate)
{
    mma_m64n128k16_bf16(d, a, b, accumulate);
}
__device__ __forceinline__ void mma_m64k16_bf16(float (&d)[88], unsigned long long a, unsigned long long b, bool accumulate)
{
    mma_m64n176k16_bf16(d, a, b, accumulate);
}
__device__ __forceinline__ void mma_m64k16_bf16(float (&d)[96], unsigned long long a, unsigned long long b, bool accumulate)
{
    mma_m64n192k16_bf16(d, a, b, accumulate);
}
__device__ __forceinline__ void mma_m64k16_bf16(float (&d)[128], unsigned long long a, unsigned long long b, bool accumulate)
{
    mma_m64n256k16_bf16(d, a, b, accumulate);
}
// The same for A from registers and B MN-major (N = 64 or 128).
__device__ __forceinline__ void mma_rs_m64k16_bf16_tb(float (&d)[32], const unsigned (&a)[4], unsigned long long b, bool accumulate)
{
    mma_rs_m64n64k16_bf16_tb(d, a, b, accumulate);
}
__device__ __forceinline__ void mma_rs_m64k16_bf16_tb(float (&d)[64], const unsigned (&a)[4], unsigned long long b, bool accumulate)
{
    mma_rs_m64n128k16_bf16_tb(d, a, b, accumulate);
}

// (an empty asm with each register as a "+" operand: no instruction)    // PTX ISA 1.0, sm_10
// The compiler may not move reads or writes of these registers across this point
// (CUTLASS's warpgroup_fence_operand). After wait_group: accumulators read then are the MMA's
// results; A fragments fenced there stay allocated (unclobbered) while an MMA still reads them.
template <int N>
__device__ __forceinline__ void fence_operands(float (&r)[N])
{
#pragma unroll
    for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i]) :: "memory");
}
template <int N>
__device__ __forceinline__ void fence_operands(unsigned (&r)[N])
{
#pragma unroll
    for (int i = 0; i < N; ++i) asm volatile("" : "+r"(r[i]) :: "memory");
}
template <int N, int M>
__device__ __forceinline__ void fence_operands(unsigned (&r)[N][M])   // A fragments: [k16 block][4]
{
#pragma unroll
    for (int i = 0; i < N; ++i) fence_operands(r[i]);
}

// Where accumulator register i of this thread sits in the 64 x N tile of its warpgroup (the
// m64nNk16 f32 fragment): row = 16 * warp + lane / 4 + 8 * ((i / 2) % 2), col = 8 * (i / 4) +
// 2 * (lane % 4) + i % 2, with warp and lane inside the warpgroup.
__device__ __forceinline__ unsigned acc_row(unsigned i, unsigned thread_in_warpgroup)
{
    return 16u * (thread_in_warpgroup / 32u) + (thread_in_warpgroup % 32u) / 4u + 8u * ((i / 2u) % 2u);
}
__device__ __forceinline__ unsigned acc_col(unsigned i, unsigned thread_in_warpgroup)
{
    return 8u * (i / 4u) + 2u * (thread_in_warpgroup % 4u) + i % 2u;
}

} // namespace wgmma
} // namespace cuasync
