/* cuasync_error.h — writing messages into the caller's error buffer. */
#ifndef CUASYNC_ERROR_H
#define CUASYNC_ERROR_H

#include "cuasync.h"

/* The driver's name for a status ("CUDA_ERROR_INVALID_VALUE"), or "CUresult <n>" when unknown. */
const char *cuasync_cu_error_name(int status);
/* The CUresult of the last driver failure reported through an error buffer (0: none yet). Lua
 * reads it right after a call returned CUASYNC_E_DRIVER, to name the code and tell a sticky one. */
int cuasync_last_cu_status(void);

#ifdef CUASYNC_INTERNAL
/* Write a formatted message and return code. */
int cuasync_fail(char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* "call: CUDA_ERROR_X (driver's text) while <what>"; returns CUASYNC_E_DRIVER. */
int cuasync_fail_cu(char *err, size_t errlen, const char *call, CUresult status, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Call a driver entry point, returning the formatted failure from the enclosing function. */
#define CUASYNC_CU(call, args, err, errlen, ...) do { \
        CUresult cuasync_r_ = cuasync_cu.call args; \
        if (cuasync_r_ != 0) return cuasync_fail_cu(err, errlen, #call, cuasync_r_, __VA_ARGS__); \
    } while (0)
#endif

#endif
