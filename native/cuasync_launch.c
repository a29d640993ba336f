/* cuasync_launch.c — the hot path: one driver call, no allocation, no re-checking. Every rule was
 * checked when the launch was prepared. */
#define CUASYNC_INTERNAL
#include "cuasync_api.h"
#include "cuasync_error.h"
#include "cuasync_launch.h"
#include "cuasync_loader.h"

int cuasync_launch(CUfunction fn, const CUlaunchConfig *c, void **params, const char *name,
                   char *err, size_t errlen)
{
    CUresult r;
    if (!cuasync_cu.cuLaunchKernelEx) {
        int rc = cuasync_driver_init(err, errlen);
        if (rc) return rc;
        if (!cuasync_cu.cuLaunchKernelEx)
            return cuasync_fail(err, errlen, CUASYNC_E_MISSING,
                                "cuLaunchKernelEx: not provided by this driver (needs CUDA 11.8)");
    }
    r = cuasync_cu.cuLaunchKernelEx(c, fn, params, NULL);
    if (r != 0)
        return cuasync_fail_cu(err, errlen, "cuLaunchKernelEx", r,
                               "launching kernel '%s' (grid %u,%u,%u block %u,%u,%u smem %u)", name,
                               c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY,
                               c->blockDimZ, c->sharedMemBytes);
    return CUASYNC_OK;
}

int cuasync_launch_max_active_clusters(CUfunction fn, const CUlaunchConfig *c, int *clusters,
                                       const char *name, char *err, size_t errlen)
{
    int rc = cuasync_driver_init(err, errlen);
    if (rc) return rc;
    if (!cuasync_cu.cuOccupancyMaxActiveClusters)
        return cuasync_fail(err, errlen, CUASYNC_E_MISSING,
                            "cuOccupancyMaxActiveClusters: not provided by this driver");
    CUASYNC_CU(cuOccupancyMaxActiveClusters, (clusters, fn, c), err, errlen,
               "computing max active clusters of kernel '%s'", name);
    return CUASYNC_OK;
}

int cuasync_launch_max_cluster_size(CUfunction fn, const CUlaunchConfig *c, int *size,
                                    const char *name, char *err, size_t errlen)
{
    int rc = cuasync_driver_init(err, errlen);
    if (rc) return rc;
    if (!cuasync_cu.cuOccupancyMaxPotentialClusterSize)
        return cuasync_fail(err, errlen, CUASYNC_E_MISSING,
                            "cuOccupancyMaxPotentialClusterSize: not provided by this driver");
    CUASYNC_CU(cuOccupancyMaxPotentialClusterSize, (size, fn, c), err, errlen,
               "computing the largest cluster size of kernel '%s'", name);
    return CUASYNC_OK;
}
