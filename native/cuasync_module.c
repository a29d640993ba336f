/* cuasync_module.c — modules, kernels and what the driver knows about them. */
#define CUASYNC_INTERNAL
#include <string.h>

#include "cuasync_api.h"
#include "cuasync_error.h"
#include "cuasync_loader.h"
#include "cuasync_module.h"


int cuasync_module_load(CUmodule *mod, const void *image, const char *what, char *err, size_t errlen)
{
    CUASYNC_READY(err, errlen);
    CUASYNC_CU(cuModuleLoadData, (mod, image), err, errlen, "loading program %s", what);
    return CUASYNC_OK;
}

int cuasync_module_unload(CUmodule mod, char *err, size_t errlen)
{
    CUASYNC_READY(err, errlen);
    CUASYNC_CU(cuModuleUnload, (mod), err, errlen, "unloading a module");
    return CUASYNC_OK;
}

int cuasync_module_function(CUfunction *fn, CUmodule mod, const char *name, const char *what,
                            char *err, size_t errlen)
{
    CUASYNC_READY(err, errlen);
    CUASYNC_CU(cuModuleGetFunction, (fn, mod, name), err, errlen, "looking up kernel '%s' in program %s",
               name, what);
    return CUASYNC_OK;
}

int cuasync_module_global(CUdeviceptr *ptr, size_t *bytes, CUmodule mod, const char *name, const char *what,
                          char *err, size_t errlen)
{
    CUASYNC_READY(err, errlen);
    CUASYNC_CU(cuModuleGetGlobal, (ptr, bytes, mod, name), err, errlen, "looking up variable '%s' in program %s",
               name, what);
    return CUASYNC_OK;
}

int cuasync_func_attributes(CUfunction fn, cuasync_func_attrs *out, const char *name,
                            char *err, size_t errlen)
{
    static const struct { int attrib; size_t offset; } attrs[] = {
        { CUASYNC_CU_FUNC_ATTRIBUTE_NUM_REGS, offsetof(cuasync_func_attrs, regs) },
        { CUASYNC_CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, offsetof(cuasync_func_attrs, static_smem) },
        { CUASYNC_CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES, offsetof(cuasync_func_attrs, const_bytes) },
        { CUASYNC_CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, offsetof(cuasync_func_attrs, local_bytes) },
        { CUASYNC_CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, offsetof(cuasync_func_attrs, max_threads) },
        { CUASYNC_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, offsetof(cuasync_func_attrs, max_dynamic_smem) },
        { CUASYNC_CU_FUNC_ATTRIBUTE_PTX_VERSION, offsetof(cuasync_func_attrs, ptx_version) },
        { CUASYNC_CU_FUNC_ATTRIBUTE_BINARY_VERSION, offsetof(cuasync_func_attrs, binary_version) },
        { CUASYNC_CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET, offsetof(cuasync_func_attrs, cluster_size_must_be_set) },
        { CUASYNC_CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, offsetof(cuasync_func_attrs, required_cluster[0]) },
        { CUASYNC_CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT, offsetof(cuasync_func_attrs, required_cluster[1]) },
        { CUASYNC_CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH, offsetof(cuasync_func_attrs, required_cluster[2]) },
        { CUASYNC_CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, offsetof(cuasync_func_attrs, non_portable_cluster_allowed) },
    };
    size_t i;
    CUASYNC_READY(err, errlen);
    memset(out, 0, sizeof *out);
    for (i = 0; i < sizeof attrs / sizeof attrs[0]; i++)
        CUASYNC_CU(cuFuncGetAttribute, ((int *)((char *)out + attrs[i].offset), attrs[i].attrib, fn),
                   err, errlen, "reading attribute %d of kernel '%s'", attrs[i].attrib, name);
    return CUASYNC_OK;
}

int cuasync_func_set_attribute(CUfunction fn, int attrib, int value, const char *what,
                               char *err, size_t errlen)
{
    CUASYNC_READY(err, errlen);
    CUASYNC_CU(cuFuncSetAttribute, (fn, attrib, value), err, errlen, "%s", what);
    return CUASYNC_OK;
}

int cuasync_func_params(CUfunction fn, int max, unsigned long long *offsets, unsigned long long *sizes,
                        int *count, const char *name, char *err, size_t errlen)
{
    int i;
    CUASYNC_READY(err, errlen);
    *count = -1;
    if (!cuasync_cu.cuFuncGetParamInfo) return CUASYNC_OK;
    for (i = 0;; i++) {
        size_t off = 0, size = 0;
        CUresult r = cuasync_cu.cuFuncGetParamInfo(fn, (size_t)i, &off, &size);
        if (r == 1 /* CUDA_ERROR_INVALID_VALUE: past the last parameter */) break;
        if (r != 0)
            return cuasync_fail_cu(err, errlen, "cuFuncGetParamInfo", r,
                                   "reading parameter %d of kernel '%s'", i, name);
        if (i < max) { offsets[i] = off; sizes[i] = size; }
    }
    *count = i;
    return CUASYNC_OK;
}

int cuasync_func_occupancy(CUfunction fn, int block_threads, size_t dynamic_smem, int *blocks,
                           const char *name, char *err, size_t errlen)
{
    CUASYNC_READY(err, errlen);
    CUASYNC_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor, (blocks, fn, block_threads, dynamic_smem),
               err, errlen, "computing the occupancy of kernel '%s' (%d threads, %zu bytes of dynamic "
               "shared memory)", name, block_threads, dynamic_smem);
    return CUASYNC_OK;
}
