// cuasync/fastmath.cuh — single-instruction approximate math for kernels' inner loops (a softmax's
// exponentials), where the default lowering adds fix-ups a loop pays for on every element: NVRTC
// without --use_fast_math lowers exp2f to ex2.approx.f32, which ptxas wraps in a subnormal
// fix-up (FSETP and two predicated FMULs around the MUFU.EX2). Compiled by NVRTC with no host
// headers.
#pragma once

namespace cuasync {
namespace fastmath {

// ex2.approx.ftz.f32 d, a;                                              // PTX ISA 1.4, sm_10
// 2^x as one MUFU.EX2 (the approximation exp2f lowers to, without its fix-up). Flushed to
// zero: a result below 2^-126 is 0, an input below 2^-126 in magnitude counts as 0 (2^0 = 1).
// 2^-inf = 0, so a masked score (-inf) gives a zero weight.
__device__ __forceinline__ float exp2_ftz(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

} // namespace fastmath
} // namespace cuasync
