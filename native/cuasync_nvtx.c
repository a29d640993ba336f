/* cuasync_nvtx.c — NVTX ranges: see cuasync_nvtx.h. Built with the NVTX 3 headers when the
 * Makefile finds them (CUASYNC_HAVE_NVTX); otherwise the functions say so. */
#define CUASYNC_INTERNAL
#include "cuasync_nvtx.h"

#ifdef CUASYNC_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>

int cuasync_nvtx_available(void) { return 1; }
int cuasync_nvtx_push(const char *name) { return nvtxRangePushA(name); }
int cuasync_nvtx_pop(void) { return nvtxRangePop(); }
#else
int cuasync_nvtx_available(void) { return 0; }
int cuasync_nvtx_push(const char *name) { (void)name; return -1; }
int cuasync_nvtx_pop(void) { return -1; }
#endif
