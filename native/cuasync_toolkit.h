/* cuasync_toolkit.h — the CUDA toolkit, found at first use (dlopen, never linked): NVRTC, its
 * include directory and cuBLAS, through one search of the toolkit roots. */
#ifndef CUASYNC_TOOLKIT_H
#define CUASYNC_TOOLKIT_H

#include "cuasync.h"

#ifdef CUASYNC_INTERNAL
/* The toolkit roots in search order ($CUDA_HOME, the root of $CUASYNC_NVRTC, /usr/local/cuda):
 * the one search NVRTC, cuBLAS and the include path share. Returns how many were written. */
int cuasync_toolkit_roots(char roots[][1024], int max);
#endif
/* The toolkit's include directory (the first root whose include/ has cooperative_groups.h, or
 * the one beside the NVRTC that was loaded), or "" when none is found. */
int cuasync_toolkit_include(char *out, size_t outlen, char *err, size_t errlen);

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
