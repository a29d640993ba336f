/* cuasync_types.h — the CUDA driver types cuasync uses, declared here so that libcuasync
 * builds without the toolkit's cuda.h (the driver is dlopen'ed, never linked).
 * spec/house/abi_spec.lua checks these layouts against the real cuda.h. */
#ifndef CUASYNC_TYPES_H
#define CUASYNC_TYPES_H

#include <stddef.h>

typedef int CUresult;                 /* enum cudaError_enum: 0 is CUDA_SUCCESS */
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUgraphNode_st *CUgraphNode;

/* CUlaunchAttributeValue is a 64-byte union; cuasync sets only the members named here. The real
 * one holds pointers (CUevent), hence 8-byte alignment: align_as_pointer keeps that. */
typedef union CUlaunchAttributeValue_union {
    char pad[64];
    struct { unsigned int x, y, z; } clusterDim;
    int clusterSchedulingPolicyPreference;
    int cooperative;
    int priority;
    int programmaticStreamSerializationAllowed;
    void *align_as_pointer;
} CUlaunchAttributeValue;

typedef struct CUlaunchAttribute_st {
    int id;                           /* CUlaunchAttributeID */
    char pad[4];
    CUlaunchAttributeValue value;
} CUlaunchAttribute;

typedef struct CUlaunchConfig_st {
    unsigned int gridDimX, gridDimY, gridDimZ;
    unsigned int blockDimX, blockDimY, blockDimZ;
    unsigned int sharedMemBytes;
    CUstream hStream;
    CUlaunchAttribute *attrs;
    unsigned int numAttrs;
} CUlaunchConfig;

/* Opaque, 128 bytes: what cuTensorMapEncode* fills and kernels take by value (as a 64-byte aligned
 * parameter). CUDA 13's cuda.h aligns the host struct to 128 bytes (CUDA 12: 64); we follow it. */
typedef struct CUtensorMap_st {
    __attribute__((aligned(128))) unsigned long long opaque[16];
} CUtensorMap;

/* What cuGraphExecUpdate says of an update it refused (the driver's own struct). */
typedef struct CUgraphExecUpdateResultInfo_st {
    int result;                       /* CUgraphExecUpdateResult: 0 is success */
    CUgraphNode errorNode;
    CUgraphNode errorFromNode;
} CUgraphExecUpdateResultInfo;

/* One edge of a graph (cuGraphGetEdges since CUDA 12.3): type 1 is a programmatic edge (PDL). */
typedef struct CUgraphEdgeData_st {
    unsigned char from_port;
    unsigned char to_port;
    unsigned char type;
    unsigned char reserved[5];
} CUgraphEdgeData;

#ifdef CUASYNC_INTERNAL
/* Driver-only structs of graph nodes: libcuasync fills them, Lua never sees them
 * (spec/house/abi_spec.lua checks them against cuda.h, built with CUASYNC_INTERNAL). */
typedef struct CUDA_KERNEL_NODE_PARAMS_v2_st {
    CUfunction func;
    unsigned int gridDimX, gridDimY, gridDimZ;
    unsigned int blockDimX, blockDimY, blockDimZ;
    unsigned int sharedMemBytes;
    void **kernelParams;
    void **extra;
    void *kern;                       /* CUkernel: unused (func is set) */
    CUcontext ctx;
} CUDA_KERNEL_NODE_PARAMS;

typedef struct CUDA_MEMSET_NODE_PARAMS_st {
    CUdeviceptr dst;
    size_t pitch;
    unsigned int value;
    unsigned int elementSize;
    size_t width;
    size_t height;
} CUDA_MEMSET_NODE_PARAMS;

typedef struct CUDA_MEMCPY3D_st {
    size_t srcXInBytes, srcY, srcZ, srcLOD;
    int srcMemoryType;                /* CUmemorytype: 1 host, 2 device */
    const void *srcHost;
    CUdeviceptr srcDevice;
    void *srcArray;
    void *reserved0;
    size_t srcPitch, srcHeight;
    size_t dstXInBytes, dstY, dstZ, dstLOD;
    int dstMemoryType;
    void *dstHost;
    CUdeviceptr dstDevice;
    void *dstArray;
    void *reserved1;
    size_t dstPitch, dstHeight;
    size_t WidthInBytes, Height, Depth;
} CUDA_MEMCPY3D;

typedef struct CUDA_CONDITIONAL_NODE_PARAMS {
    unsigned long long handle;        /* CUgraphConditionalHandle */
    int type;                         /* CUgraphConditionalNodeType: 0 if, 1 while */
    unsigned int size;
    CUgraph *phGraph_out;             /* the driver's array of body graphs */
    CUcontext ctx;
} CUDA_CONDITIONAL_NODE_PARAMS;

/* 256 bytes: cuasync only fills the conditional member; the rest must be zero. */
typedef struct CUgraphNodeParams_st {
    int type;                         /* CUgraphNodeType: 13 conditional */
    int reserved0[3];
    union {
        long long reserved1[29];
        CUDA_CONDITIONAL_NODE_PARAMS conditional;
    } u;
    long long reserved2;
} CUgraphNodeParams;
#endif

enum { CUASYNC_CUDA_ERROR_NOT_READY = 600 };
enum {
    CUASYNC_CU_LAUNCH_ATTRIBUTE_COOPERATIVE = 2,
    CUASYNC_CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4,
    CUASYNC_CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE = 5,
    CUASYNC_CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6
};
enum {
    CUASYNC_CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
    CUASYNC_CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1,
    CUASYNC_CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES = 2,
    CUASYNC_CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3,
    CUASYNC_CU_FUNC_ATTRIBUTE_NUM_REGS = 4,
    CUASYNC_CU_FUNC_ATTRIBUTE_PTX_VERSION = 5,
    CUASYNC_CU_FUNC_ATTRIBUTE_BINARY_VERSION = 6,
    CUASYNC_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
    CUASYNC_CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET = 10,
    CUASYNC_CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH = 11,
    CUASYNC_CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT = 12,
    CUASYNC_CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH = 13,
    CUASYNC_CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 14
};

#endif
