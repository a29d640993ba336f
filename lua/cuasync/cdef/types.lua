-- Declarations of native/cuasync_types.h for the FFI (spec/house/cdef_spec.lua keeps the two identical).
local ffi = require("ffi")

local declarations = [[
typedef int CUresult;
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
    int id;
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
typedef struct CUtensorMap_st {
    __attribute__((aligned(128))) unsigned long long opaque[16];
} CUtensorMap;
typedef struct CUgraphExecUpdateResultInfo_st {
    int result;
    CUgraphNode errorNode;
    CUgraphNode errorFromNode;
} CUgraphExecUpdateResultInfo;
typedef struct CUgraphEdgeData_st {
    unsigned char from_port;
    unsigned char to_port;
    unsigned char type;
    unsigned char reserved[5];
} CUgraphEdgeData;
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
]]

ffi.cdef(declarations)
return declarations
