/* cuasync_loader.h — finding the CUDA driver and NVRTC at first use (dlopen, never linked):
 * the driver in cuasync_loader.c; the toolkit (NVRTC, cuBLAS, the include path) in
 * cuasync_toolkit.c. One header for both: the FFI declares them as one module (cdef.loader). */
#ifndef CUASYNC_LOADER_H
#define CUASYNC_LOADER_H

#include "cuasync.h"

/* dlopen libcuda.so.1 (or $CUASYNC_CUDA_LIB), resolve the table through cuGetProcAddress, cuInit.
 * Idempotent: a failure is remembered and reported the same way on every later call. */
int cuasync_driver_init(char *err, size_t errlen);
#ifdef CUASYNC_INTERNAL
/* The first line of every entry point that calls the driver: init it, or return its failure. */
#define CUASYNC_READY(err, errlen) do { int cuasync_rc_ = cuasync_driver_init(err, errlen); if (cuasync_rc_) return cuasync_rc_; } while (0)
/* The toolkit roots in search order ($CUDA_HOME, the root of $CUASYNC_NVRTC, /usr/local/cuda):
 * the one search NVRTC, cuBLAS and the include path share. Returns how many were written. */
int cuasync_toolkit_roots(char roots[][1024], int max);
/* A library opened at first use: untried (0), ready (1) or failed (-1), and then failed the same
 * way, with the same message, on every later call. */
typedef struct {
    int state;
    int code;
    char message[2400];
} cuasync_load_state;
/* Records a load's outcome in s (a failure is also written to err); returns code. */
int cuasync_load_remember(cuasync_load_state *s, int code, char *err, size_t errlen);
/* CUASYNC_TRACE set (and not "0"): each loading step on stderr, as "cuasync: ...". */
int cuasync_tracing(void);
#define CUASYNC_TRACE(...) do { if (cuasync_tracing()) { fprintf(stderr, "cuasync: " __VA_ARGS__); fputc('\n', stderr); } } while (0)
#endif
/* The toolkit's include directory (the first root whose include/ has cooperative_groups.h, or
 * the one beside the NVRTC that was loaded), or "" when none is found. */
int cuasync_toolkit_include(char *out, size_t outlen, char *err, size_t errlen);

/* The driver's version (e.g. 13000), after a successful init. */
int cuasync_driver_version(int *version, char *err, size_t errlen);
/* A resolved driver entry point by name (for raw-FFI comparisons in benchmarks), or NULL. */
void *cuasync_driver_symbol(const char *name);

/* dlopen NVRTC: $CUASYNC_NVRTC, then $CUDA_HOME/lib64, /usr/local/cuda/lib64, then the SONAME. */
int cuasync_nvrtc_init(char *err, size_t errlen);
int cuasync_nvrtc_version(int *major, int *minor, char *err, size_t errlen);
/* Which NVRTC library would be (or was) loaded, and its identity "path size mtime": the compile
 * cache keys on this without paying for the dlopen of a 100 MB library on a cache hit. */
int cuasync_nvrtc_identity(char *out, size_t outlen, char *err, size_t errlen);
/* The loaded NVRTC's path, or "" before cuasync_nvrtc_init succeeded. */
const char *cuasync_nvrtc_path(void);
/* A cuBLAS symbol (the library opened on first use), or NULL with a message in err. */
void *cuasync_blas_symbol(const char *name, char *err, size_t errlen);

#endif
