/* cuasync.h — version and status codes shared by every native file.
 * Every public function returns one of these and, on failure, writes a message naming the call,
 * the driver's or NVRTC's error and what was being done into a caller-owned buffer. */
#ifndef CUASYNC_H
#define CUASYNC_H

#include <stddef.h>
#include "cuasync_types.h"

/* Lua checks both at load: the version for the message, the ABI for compatibility. */
#define CUASYNC_VERSION_STRING "0.1.0"
#define CUASYNC_ABI 1

enum {
    CUASYNC_OK = 0,
    CUASYNC_E_NODRIVER = 1,   /* libcuda.so.1 missing or unusable */
    CUASYNC_E_DRIVER = 2,     /* a driver call failed */
    CUASYNC_E_NONVRTC = 3,    /* libnvrtc missing or unusable */
    CUASYNC_E_NVRTC = 4,      /* an NVRTC call failed (not the compile itself) */
    CUASYNC_E_COMPILE = 5,    /* the source did not compile: the log says why */
    CUASYNC_E_INVALID = 6,    /* a bad argument reached the native layer */
    CUASYNC_E_NOMEM = 7,      /* host allocation failed */
    CUASYNC_E_IO = 8,         /* a file operation failed */
    CUASYNC_E_MISSING = 9,    /* the driver lacks an entry point cuasync needs */
    CUASYNC_E_NOBLAS = 10,    /* cuBLAS (the GEMM yardstick) missing or unusable */
    CUASYNC_E_NONVML = 11,    /* libnvidia-ml.so.1 missing, too old or not starting */
    CUASYNC_E_NVML = 12       /* an NVML call failed (finding the device) */
};

const char *cuasync_version(void);
int cuasync_abi(void);

#endif
