/* cuasync_blas.h — cuBLAS as the yardstick of the GEMM benchmarks (dlopen'ed through the loader,
 * never linked): C = A * B^T with A (m x k) and B (n x k) bf16 row-major, C (m x n) f32 row-major,
 * f32 accumulation, on the default stream of the current context. */
#ifndef CUASYNC_BLAS_H
#define CUASYNC_BLAS_H

#include "cuasync.h"

int cuasync_blas_gemm_bf16_tn(unsigned long long a, unsigned long long b, unsigned long long c, int m, int n, int k,
                              char *err, size_t errlen);

#endif
