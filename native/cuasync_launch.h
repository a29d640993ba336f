/* cuasync_launch.h — kernel launches through cuLaunchKernelEx. The caller (a prepared launch in
 * Lua) owns the config, its attributes and the packed parameters; nothing is copied here. */
#ifndef CUASYNC_LAUNCH_H
#define CUASYNC_LAUNCH_H

#include "cuasync.h"

int cuasync_launch(CUfunction fn, const CUlaunchConfig *config, void **params, const char *name,
                   char *err, size_t errlen);
int cuasync_launch_max_active_clusters(CUfunction fn, const CUlaunchConfig *config, int *clusters,
                                       const char *name, char *err, size_t errlen);
int cuasync_launch_max_cluster_size(CUfunction fn, const CUlaunchConfig *config, int *size,
                                    const char *name, char *err, size_t errlen);

#endif
