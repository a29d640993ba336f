/* cuasync_compile.h — NVRTC compilation. The result owns the log, the PTX, the cubin (when the
 * target is a real architecture) and the lowered name of each name expression. */
#ifndef CUASYNC_COMPILE_H
#define CUASYNC_COMPILE_H

#include "cuasync.h"

typedef struct cuasync_compiled cuasync_compiled;

/* Returns CUASYNC_OK, CUASYNC_E_COMPILE (the source is wrong: *out holds the log) or another code
 * (*out is NULL). On CUASYNC_OK and CUASYNC_E_COMPILE the caller frees *out. */
int cuasync_compile(const char *source, const char *name,
                    int nheaders, const char *const *header_sources, const char *const *header_names,
                    int noptions, const char *const *options,
                    int nexpressions, const char *const *expressions,
                    cuasync_compiled **out, char *err, size_t errlen);
const char *cuasync_compiled_log(const cuasync_compiled *c, size_t *len);
const char *cuasync_compiled_ptx(const cuasync_compiled *c, size_t *len);
const char *cuasync_compiled_cubin(const cuasync_compiled *c, size_t *len);
const char *cuasync_compiled_lowered(const cuasync_compiled *c, int index);
void cuasync_compiled_free(cuasync_compiled *c);
/* How many compiles were repeated with a larger PCH heap (NVRTC said the automatic precompiled
 * header did not fit: PCH_CREATE_HEAP_EXHAUSTED). */
int cuasync_compile_pch_retries(void);

#endif
