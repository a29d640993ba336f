// cuasync/graph.cuh — conditional nodes of a CUDA graph, device side. A kernel captured into
// cuasync.graph (or a body of g:while_ / g:if_) takes the condition as a parameter of signature
// type `cond` and sets it with graph::set_condition(c, value): a while node runs its body again
// while the value is non-zero, an if node runs its body when it is non-zero. The value is what
// the last set_condition before the node's evaluation wrote (racing sets are undefined: let one
// thread set it). Compiled by NVRTC with no host headers.
#pragma once

namespace cuasync {
namespace graph {
namespace detail {
// The CUDA runtime declares it in cuda_device_runtime_api.h, which NVRTC lacks without -rdc. It
// is not in libcudadevrt: the cubin keeps it as an undefined symbol and the driver resolves it
// when it loads the module (as nvcc's own cubins do), so no device-runtime link is needed.
// extern "C": the symbol is the plain name wherever it is declared.
extern "C" __device__ void cudaGraphSetConditional(unsigned long long handle, unsigned int value);
} // namespace detail

// A condition handle (CUgraphConditionalHandle): pass g:condition{...} for a `cond` parameter.
typedef unsigned long long condition;

// call.uni cudaGraphSetConditional, (handle, value);     // PTX ISA 3.0 call; driver CUDA 12.3, sm_50
// Set the condition the graph's conditional node reads next.
__device__ __forceinline__ void set_condition(condition c, unsigned value)
{
    detail::cudaGraphSetConditional(c, value);
}

} // namespace graph
} // namespace cuasync
