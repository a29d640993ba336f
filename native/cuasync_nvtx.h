/* cuasync_nvtx.h — NVTX ranges for profilers (Nsight Systems), through NVTX 3, header-only: its
 * code loads the injection library a profiler names (NVTX_INJECTION64_PATH) at the first call;
 * without one every call returns at once. Nothing links. */
#ifndef CUASYNC_NVTX_H
#define CUASYNC_NVTX_H

#include "cuasync.h"

/* 1 when the library was built with the NVTX 3 headers (CUDA_HOME/include/nvtx3), else 0: then
 * push and pop do nothing and return -1. */
int cuasync_nvtx_available(void);
/* nvtxRangePushA(name): the nesting depth, or a negative number. */
int cuasync_nvtx_push(const char *name);
/* nvtxRangePop(): the depth before the pop, or a negative number. */
int cuasync_nvtx_pop(void);

#endif
