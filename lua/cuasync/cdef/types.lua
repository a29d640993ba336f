-- Declarations of native/cuasync_types.h for the FFI (spec/cdef_spec.lua keeps the two identical).
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
typedef union CUlaunchAttributeValue_union {
    char pad[64];
    struct { unsigned int x, y, z; } clusterDim;
    int clusterSchedulingPolicyPreference;
    int cooperative;
    int priority;
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
enum {
    CUASYNC_CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4,
    CUASYNC_CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE = 5
};
]]

ffi.cdef(declarations)
return declarations
