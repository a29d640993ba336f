/* cuasync_loader.h — finding the CUDA driver at first use (dlopen, never linked), and what the
 * driver, the toolkit (cuasync_toolkit.h) and NVML (cuasync_nvml.h) loaders share: a failure
 * remembered, the trace. */
#ifndef CUASYNC_LOADER_H
#define CUASYNC_LOADER_H

#include "cuasync.h"

/* dlopen libcuda.so.1 (or $CUASYNC_CUDA_LIB), resolve the table through cuGetProcAddress, cuInit.
 * Idempotent: a failure is remembered and reported the same way on every later call. */
int cuasync_driver_init(char *err, size_t errlen);
#ifdef CUASYNC_INTERNAL
/* The first line of every entry point that calls the driver: init it, or return its failure. */
#define CUASYNC_READY(err, errlen) do { int cuasync_rc_ = cuasync_driver_init(err, errlen); if (cuasync_rc_) return cuasync_rc_; } while (0)
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
/* The driver's version (e.g. 13000), after a successful init. */
int cuasync_driver_version(int *version, char *err, size_t errlen);
/* A resolved driver entry point by name (for raw-FFI comparisons in benchmarks), or NULL. */
void *cuasync_driver_symbol(const char *name);

#endif
