/* cuasync_blas.h — cuBLAS as the yardstick of the GEMM benchmarks (dlopen'ed through the loader,
 * never linked): C = A * B^T with A (m x k) and B (n x k) bf16 row-major, C (m x n) f32 row-major,
 * f32 accumulation, on the default stream of the current context; the _bf16 twin writes C as bf16. */
#ifndef CUASYNC_BLAS_H
#define CUASYNC_BLAS_H

#include "cuasync.h"

int cuasync_blas_gemm_bf16_tn(unsigned long long a, unsigned long long b, unsigned long long c, int m, int n, int k,
                              char *err, size_t errlen);
int cuasync_blas_gemm_bf16_tn_bf16(unsigned long long a, unsigned long long b, unsigned long long c, int m, int n, int k,
                                   char *err, size_t errlen);

#endif
