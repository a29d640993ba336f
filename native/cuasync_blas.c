/* cuasync_blas.c — see cuasync_blas.h. One handle, made on first use. cuBLAS is column-major: the
 * row-major C = A * B^T is the column-major C^T = B * A^T, i.e. gemm(op T on B, op N on A). */
#define CUASYNC_INTERNAL
#include <stdio.h>
#include <string.h>
#include "cuasync_blas.h"
#include "cuasync_error.h"
#include "cuasync_loader.h"
#include "cuasync_toolkit.h"

typedef int (*create_fn)(void **handle);
typedef int (*gemmex_fn)(void *handle, int transa, int transb, int m, int n, int k, const void *alpha,
                         const void *a, int atype, int lda, const void *b, int btype, int ldb, const void *beta,
                         void *c, int ctype, int ldc, int compute, int algo);

enum { OP_N = 0, OP_T = 1, R_32F = 0, R_16BF = 14, COMPUTE_32F = 68, GEMM_DEFAULT = -1 };

/* C = A * B^T with C of type ctype (R_32F or R_16BF): one handle, cuBLAS resolved on first use. */
static int gemm_tn(unsigned long long a, unsigned long long b, unsigned long long c, int m, int n, int k, int ctype,
                   char *err, size_t errlen)
{
    static void *handle;
    static gemmex_fn gemmex;
    const float alpha = 1.0f, beta = 0.0f;
    int rc;
    if (!handle) {
        create_fn create;
        /* dlsym's object pointer becomes a function pointer by copy (ISO C has no cast for it) */
        void *p = cuasync_blas_symbol("cublasCreate_v2", err, errlen);
        if (!p) return CUASYNC_E_NOBLAS;
        memcpy(&create, &p, sizeof create);
        p = cuasync_blas_symbol("cublasGemmEx", err, errlen);
        if (!p) return CUASYNC_E_NOBLAS;
        memcpy(&gemmex, &p, sizeof gemmex);
        rc = create(&handle);
        if (rc != 0) {
            handle = NULL;
            return cuasync_fail(err, errlen, CUASYNC_E_NOBLAS, "cublasCreate failed (status %d)", rc);
        }
    }
    rc = gemmex(handle, OP_T, OP_N, n, m, k, &alpha, (const void *)(size_t)b, R_16BF, k, (const void *)(size_t)a,
                R_16BF, k, &beta, (void *)(size_t)c, ctype, n, COMPUTE_32F, GEMM_DEFAULT);
    if (rc != 0)
        return cuasync_fail(err, errlen, CUASYNC_E_NOBLAS, "cublasGemmEx(%d x %d x %d, bf16 -> %s) failed (status %d)",
                            m, n, k, ctype == R_16BF ? "bf16" : "f32", rc);
    return CUASYNC_OK;
}

int cuasync_blas_gemm_bf16_tn(unsigned long long a, unsigned long long b, unsigned long long c, int m, int n, int k,
                              char *err, size_t errlen)
{
    return gemm_tn(a, b, c, m, n, k, R_32F, err, errlen);
}

int cuasync_blas_gemm_bf16_tn_bf16(unsigned long long a, unsigned long long b, unsigned long long c, int m, int n, int k,
                                   char *err, size_t errlen)
{
    return gemm_tn(a, b, c, m, n, k, R_16BF, err, errlen);
}
