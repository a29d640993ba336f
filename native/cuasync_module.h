/* cuasync_module.h — loaded modules, their kernels and kernel attributes. */
#ifndef CUASYNC_MODULE_H
#define CUASYNC_MODULE_H

#include "cuasync.h"

typedef struct cuasync_func_attrs {
    int regs;
    int static_smem;
    int const_bytes;
    int local_bytes;
    int max_threads;
    int max_dynamic_smem;
    int ptx_version;
    int binary_version;
    int cluster_size_must_be_set;
    int required_cluster[3];         /* from __cluster_dims__, 0 when none */
    int non_portable_cluster_allowed;
} cuasync_func_attrs;

/* image: a cubin or NUL-terminated PTX; what: names the program in messages. */
int cuasync_module_load(CUmodule *mod, const void *image, const char *what, char *err, size_t errlen);
int cuasync_module_unload(CUmodule mod, char *err, size_t errlen);
int cuasync_module_function(CUfunction *fn, CUmodule mod, const char *name, const char *what,
                            char *err, size_t errlen);
/* The address and size of a __device__ / __constant__ variable of a loaded module. */
int cuasync_module_global(CUdeviceptr *ptr, size_t *bytes, CUmodule mod, const char *name, const char *what,
                          char *err, size_t errlen);
int cuasync_func_attributes(CUfunction fn, cuasync_func_attrs *out, const char *name,
                            char *err, size_t errlen);
int cuasync_func_set_attribute(CUfunction fn, int attrib, int value, const char *what,
                               char *err, size_t errlen);
/* The kernel's parameter layout as the cubin records it. *count is -1 when the driver cannot
 * tell (cuFuncGetParamInfo needs CUDA 12.4); at most max entries are written. */
int cuasync_func_params(CUfunction fn, int max, unsigned long long *offsets, unsigned long long *sizes,
                        int *count, const char *name, char *err, size_t errlen);
int cuasync_func_occupancy(CUfunction fn, int block_threads, size_t dynamic_smem, int *blocks,
                           const char *name, char *err, size_t errlen);

#endif
