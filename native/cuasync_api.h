/* cuasync_api.h — every driver and NVRTC entry point cuasync calls, in one X-macro table each.
 * X(name, cuda_version, return_type, (parameters)): the version is the CUDA release whose ABI of
 * that symbol we want from cuGetProcAddress (so cuMemAlloc resolves to the 64-bit _v2). Internal:
 * no Lua code sees these. */
#ifndef CUASYNC_API_H
#define CUASYNC_API_H

#include "cuasync_types.h"

#define CUASYNC_DRIVER_API(X) \
    X(cuInit, 2000, CUresult, (unsigned int flags)) \
    X(cuDriverGetVersion, 2020, CUresult, (int *version)) \
    X(cuGetErrorName, 6000, CUresult, (CUresult error, const char **str)) \
    X(cuGetErrorString, 6000, CUresult, (CUresult error, const char **str)) \
    X(cuDeviceGetCount, 2000, CUresult, (int *count)) \
    X(cuDeviceGet, 2000, CUresult, (CUdevice *dev, int ordinal)) \
    X(cuDeviceGetName, 2000, CUresult, (char *name, int len, CUdevice dev)) \
    X(cuDeviceGetAttribute, 2000, CUresult, (int *value, int attrib, CUdevice dev)) \
    X(cuDeviceTotalMem, 3020, CUresult, (size_t *bytes, CUdevice dev)) \
    X(cuDeviceGetPCIBusId, 4010, CUresult, (char *pci_bus_id, int len, CUdevice dev)) \
    X(cuDevicePrimaryCtxRetain, 7000, CUresult, (CUcontext *ctx, CUdevice dev)) \
    X(cuCtxSetCurrent, 4000, CUresult, (CUcontext ctx)) \
    X(cuCtxSynchronize, 2000, CUresult, (void)) \
    X(cuDevicePrimaryCtxReset, 11000, CUresult, (CUdevice dev)) \
    X(cuDevicePrimaryCtxRelease, 11000, CUresult, (CUdevice dev)) \
    X(cuMemAlloc, 3020, CUresult, (CUdeviceptr *dptr, size_t bytes)) \
    X(cuMemFree, 3020, CUresult, (CUdeviceptr dptr)) \
    X(cuMemAllocHost, 3020, CUresult, (void **pp, size_t bytes)) \
    X(cuMemFreeHost, 2000, CUresult, (void *p)) \
    X(cuMemHostAlloc, 3020, CUresult, (void **pp, size_t bytes, unsigned int flags)) \
    X(cuMemHostGetDevicePointer, 3020, CUresult, (CUdeviceptr *dptr, void *p, unsigned int flags)) \
    X(cuMemGetInfo, 3020, CUresult, (size_t *free_bytes, size_t *total_bytes)) \
    X(cuMemcpyHtoD, 3020, CUresult, (CUdeviceptr dst, const void *src, size_t bytes)) \
    X(cuMemcpyDtoH, 3020, CUresult, (void *dst, CUdeviceptr src, size_t bytes)) \
    X(cuMemcpyDtoD, 3020, CUresult, (CUdeviceptr dst, CUdeviceptr src, size_t bytes)) \
    X(cuMemcpyDtoDAsync, 3020, CUresult, (CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s)) \
    X(cuMemsetD8, 3020, CUresult, (CUdeviceptr dst, unsigned char value, size_t count)) \
    X(cuMemcpyHtoDAsync, 3020, CUresult, (CUdeviceptr dst, const void *src, size_t bytes, CUstream s)) \
    X(cuMemcpyDtoHAsync, 3020, CUresult, (void *dst, CUdeviceptr src, size_t bytes, CUstream s)) \
    X(cuMemsetD8Async, 3020, CUresult, (CUdeviceptr dst, unsigned char value, size_t count, CUstream s)) \
    X(cuMemsetD32Async, 3020, CUresult, (CUdeviceptr dst, unsigned int value, size_t count, CUstream s)) \
    X(cuModuleLoadData, 2000, CUresult, (CUmodule *mod, const void *image)) \
    X(cuModuleUnload, 2000, CUresult, (CUmodule mod)) \
    X(cuModuleGetFunction, 2000, CUresult, (CUfunction *fn, CUmodule mod, const char *name)) \
    X(cuModuleGetGlobal, 3020, CUresult, (CUdeviceptr *dptr, size_t *bytes, CUmodule mod, const char *name)) \
    X(cuFuncGetAttribute, 2020, CUresult, (int *value, int attrib, CUfunction fn)) \
    X(cuFuncSetAttribute, 9000, CUresult, (CUfunction fn, int attrib, int value)) \
    X(cuFuncGetParamInfo, 12040, CUresult, (CUfunction fn, size_t index, size_t *offset, size_t *size)) \
    X(cuLaunchKernel, 4000, CUresult, (CUfunction f, unsigned gx, unsigned gy, unsigned gz, \
        unsigned bx, unsigned by, unsigned bz, unsigned smem, CUstream s, void **params, void **extra)) \
    X(cuLaunchKernelEx, 11060, CUresult, (const CUlaunchConfig *config, CUfunction f, void **params, \
        void **extra)) \
    X(cuOccupancyMaxActiveBlocksPerMultiprocessor, 6050, CUresult, (int *blocks, CUfunction f, \
        int block_size, size_t dynamic_smem)) \
    X(cuOccupancyMaxActiveClusters, 11070, CUresult, (int *clusters, CUfunction f, \
        const CUlaunchConfig *config)) \
    X(cuOccupancyMaxPotentialClusterSize, 11070, CUresult, (int *size, CUfunction f, \
        const CUlaunchConfig *config)) \
    X(cuStreamCreate, 2000, CUresult, (CUstream *s, unsigned int flags)) \
    X(cuStreamDestroy, 4000, CUresult, (CUstream s)) \
    X(cuStreamSynchronize, 2000, CUresult, (CUstream s)) \
    X(cuStreamQuery, 2000, CUresult, (CUstream s)) \
    X(cuEventCreate, 2000, CUresult, (CUevent *e, unsigned int flags)) \
    X(cuEventDestroy, 4000, CUresult, (CUevent e)) \
    X(cuEventRecord, 2000, CUresult, (CUevent e, CUstream s)) \
    X(cuEventSynchronize, 2000, CUresult, (CUevent e)) \
    X(cuEventQuery, 2000, CUresult, (CUevent e)) \
    X(cuEventElapsedTime, 2000, CUresult, (float *ms, CUevent start, CUevent end)) \
    X(cuTensorMapEncodeTiled, 12000, CUresult, (CUtensorMap *map, int dtype, unsigned rank, void *address, \
        const unsigned long long *dims, const unsigned long long *strides, const unsigned *box, \
        const unsigned *element_strides, int interleave, int swizzle, int l2_promotion, int oob_fill)) \
    X(cuTensorMapEncodeIm2col, 12000, CUresult, (CUtensorMap *map, int dtype, unsigned rank, void *address, \
        const unsigned long long *dims, const unsigned long long *strides, const int *lower, const int *upper, \
        unsigned channels, unsigned pixels, const unsigned *element_strides, int interleave, int swizzle, \
        int l2_promotion, int oob_fill)) \
    X(cuTensorMapReplaceAddress, 12000, CUresult, (CUtensorMap *map, void *address)) \
    X(cuStreamBeginCapture, 10010, CUresult, (CUstream s, int mode)) \
    X(cuStreamEndCapture, 10000, CUresult, (CUstream s, CUgraph *graph)) \
    X(cuStreamIsCapturing, 10000, CUresult, (CUstream s, int *status)) \
    X(cuGraphInstantiateWithFlags, 11040, CUresult, (CUgraphExec *exec, CUgraph graph, unsigned long long flags)) \
    X(cuGraphLaunch, 10000, CUresult, (CUgraphExec exec, CUstream s)) \
    X(cuGraphUpload, 11010, CUresult, (CUgraphExec exec, CUstream s)) \
    X(cuGraphExecUpdate, 12000, CUresult, (CUgraphExec exec, CUgraph graph, CUgraphExecUpdateResultInfo *info)) \
    X(cuGraphDestroy, 10000, CUresult, (CUgraph graph)) \
    X(cuGraphExecDestroy, 10000, CUresult, (CUgraphExec exec)) \
    X(cuGraphGetNodes, 10000, CUresult, (CUgraph graph, CUgraphNode *nodes, size_t *count)) \
    X(cuGraphNodeGetType, 10000, CUresult, (CUgraphNode node, int *type)) \
    X(cuGraphGetEdges, 12030, CUresult, (CUgraph graph, CUgraphNode *from, CUgraphNode *to, \
        CUgraphEdgeData *edges, size_t *count)) \
    X(cuGraphDebugDotPrint, 11030, CUresult, (CUgraph graph, const char *path, unsigned int flags)) \
    X(cuCtxGetCurrent, 4000, CUresult, (CUcontext *ctx)) \
    X(cuStreamGetCaptureInfo, 12030, CUresult, (CUstream s, int *status, unsigned long long *id, CUgraph *graph, \
        const CUgraphNode **deps, const CUgraphEdgeData **edges, size_t *count)) \
    X(cuStreamUpdateCaptureDependencies, 12030, CUresult, (CUstream s, CUgraphNode *deps, \
        const CUgraphEdgeData *edges, size_t count, unsigned int flags)) \
    X(cuStreamBeginCaptureToGraph, 12030, CUresult, (CUstream s, CUgraph graph, const CUgraphNode *deps, \
        const CUgraphEdgeData *edges, size_t count, int mode)) \
    X(cuGraphConditionalHandleCreate, 12030, CUresult, (unsigned long long *handle, CUgraph graph, CUcontext ctx, \
        unsigned int default_value, unsigned int flags)) \
    X(cuGraphAddNode, 12030, CUresult, (CUgraphNode *node, CUgraph graph, const CUgraphNode *deps, \
        const CUgraphEdgeData *edges, size_t count, CUgraphNodeParams *params)) \
    X(cuGraphExecKernelNodeSetParams, 12000, CUresult, (CUgraphExec exec, CUgraphNode node, \
        const CUDA_KERNEL_NODE_PARAMS *params)) \
    X(cuGraphExecMemsetNodeSetParams, 10020, CUresult, (CUgraphExec exec, CUgraphNode node, \
        const CUDA_MEMSET_NODE_PARAMS *params, CUcontext ctx)) \
    X(cuGraphExecMemcpyNodeSetParams, 10020, CUresult, (CUgraphExec exec, CUgraphNode node, \
        const CUDA_MEMCPY3D *params, CUcontext ctx)) \
    X(cuGraphNodeSetEnabled, 11060, CUresult, (CUgraphExec exec, CUgraphNode node, unsigned int enabled))

/* NVRTC has no proc-address call: the loader resolves these with dlsym from the library it opened. */
typedef struct _nvrtcProgram *nvrtcProgram;
#define CUASYNC_NVRTC_API(X) \
    X(nvrtcVersion, int, (int *major, int *minor)) \
    X(nvrtcGetErrorString, const char *, (int result)) \
    X(nvrtcCreateProgram, int, (nvrtcProgram *prog, const char *src, const char *name, \
        int nheaders, const char *const *headers, const char *const *include_names)) \
    X(nvrtcDestroyProgram, int, (nvrtcProgram *prog)) \
    X(nvrtcCompileProgram, int, (nvrtcProgram prog, int nopts, const char *const *opts)) \
    X(nvrtcGetProgramLogSize, int, (nvrtcProgram prog, size_t *size)) \
    X(nvrtcGetProgramLog, int, (nvrtcProgram prog, char *log)) \
    X(nvrtcGetPTXSize, int, (nvrtcProgram prog, size_t *size)) \
    X(nvrtcGetPTX, int, (nvrtcProgram prog, char *ptx)) \
    X(nvrtcGetCUBINSize, int, (nvrtcProgram prog, size_t *size)) \
    X(nvrtcGetCUBIN, int, (nvrtcProgram prog, char *cubin)) \
    X(nvrtcAddNameExpression, int, (nvrtcProgram prog, const char *expr)) \
    X(nvrtcGetLoweredName, int, (nvrtcProgram prog, const char *expr, const char **lowered))

/* Optional (NVRTC 12.8+, precompiled headers): NULL where the library lacks them. */
#define CUASYNC_NVRTC_OPTIONAL_API(X) \
    X(nvrtcGetPCHCreateStatus, int, (nvrtcProgram prog)) \
    X(nvrtcGetPCHHeapSizeRequired, int, (nvrtcProgram prog, size_t *size)) \
    X(nvrtcGetPCHHeapSize, int, (size_t *size)) \
    X(nvrtcSetPCHHeapSize, int, (size_t size))
#define CUASYNC_NVRTC_PCH_HEAP_EXHAUSTED 14

#define CUASYNC_DECLARE_DRV(name, ver, ret, params) typedef ret (*cuasync_pfn_##name) params;
CUASYNC_DRIVER_API(CUASYNC_DECLARE_DRV)
#define CUASYNC_DECLARE_NVRTC(name, ret, params) typedef ret (*cuasync_pfn_##name) params;
CUASYNC_NVRTC_API(CUASYNC_DECLARE_NVRTC)
CUASYNC_NVRTC_OPTIONAL_API(CUASYNC_DECLARE_NVRTC)

#define CUASYNC_MEMBER_DRV(name, ver, ret, params) cuasync_pfn_##name name;
#define CUASYNC_MEMBER_NVRTC(name, ret, params) cuasync_pfn_##name name;
typedef struct { CUASYNC_DRIVER_API(CUASYNC_MEMBER_DRV) } cuasync_driver_table;
typedef struct { CUASYNC_NVRTC_API(CUASYNC_MEMBER_NVRTC) CUASYNC_NVRTC_OPTIONAL_API(CUASYNC_MEMBER_NVRTC) } cuasync_nvrtc_table;

extern cuasync_driver_table cuasync_cu;    /* filled by cuasync_driver_init */
extern cuasync_nvrtc_table cuasync_nvrtc;  /* filled by cuasync_nvrtc_init */

#endif
