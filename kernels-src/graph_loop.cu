// graph_loop.cu — a convergence loop for a while node and its host-driven twin
// (examples/bench_graph_loop.lua, docs/orchestration.md).
//   jacobi(x, y, n, tol, iters, max_iters, c)     one Jacobi sweep of the 1-D Laplace problem
//       (ends fixed) in one block of n <= 1024 threads: y[i] = (x[i-1] + x[i+1]) / 2; thread 0
//       counts the sweep and sets the while node's condition c to (max |y - x| > tol and fewer
//       than max_iters sweeps ran)
//   jacobi_flag(x, y, n, tol, iters, max_iters, flag)   the same sweep, the answer written to
//       *flag for the host to read
//   jacobi_guarded(x, y, n, tol, iters, max_iters, done, c)   jacobi for a while body of several
//       copies (g:while_(c, fn, { unroll = n })): once a sweep has set c to 0 it sets *done, and
//       the copies after it in the same round return at once (no sweep, no count, no write)
//   scale(y, x, a, n)                              y[i] = a * x[i]: a node whose scalar is edited
#include <cuasync/graph.cuh>

// The sweep and the residual; returns max |y - x| in thread 0.
__device__ __forceinline__ float sweep(const float *x, float *y, unsigned n)
{
    __shared__ float r[1024];
    const unsigned i = threadIdx.x;
    float d = 0.0f;
    if (i < n) {
        const float v = (i == 0 || i == n - 1) ? x[i] : 0.5f * (x[i - 1] + x[i + 1]);
        y[i] = v;
        d = fabsf(v - x[i]);
    }
    r[i] = d;
    __syncthreads();
    unsigned top = 1u;   // the tree from the next power of two: any block size reduces every element
    while (top < blockDim.x) top <<= 1;
    for (unsigned s = top / 2u; s > 0u; s /= 2u) {
        if (i < s && i + s < blockDim.x) r[i] = fmaxf(r[i], r[i + s]);
        __syncthreads();
    }
    return r[0];
}

extern "C" __global__ void jacobi(const float *x, float *y, unsigned n, float tol, unsigned *iters,
                                  unsigned max_iters, cuasync::graph::condition c)
{
    const float residual = sweep(x, y, n);
    if (threadIdx.x == 0) {
        const unsigned k = *iters + 1;
        *iters = k;
        cuasync::graph::set_condition(c, residual > tol && k < max_iters);
    }
}

extern "C" __global__ void jacobi_flag(const float *x, float *y, unsigned n, float tol, unsigned *iters,
                                       unsigned max_iters, unsigned *flag)
{
    const float residual = sweep(x, y, n);
    if (threadIdx.x == 0) {
        const unsigned k = *iters + 1;
        *iters = k;
        *flag = residual > tol && k < max_iters;
    }
}

// *done is reset with *iters at the start of the graph. Every thread reads it before sweep()'s
// first barrier and thread 0 writes it after the last, so the block agrees on it. The copy node
// after this kernel in the body (y -> x) is harmless after the loop ended: the last sweep's copy
// made x equal to y, and a returned copy leaves y as it was, so copying it again changes nothing.
extern "C" __global__ void jacobi_guarded(const float *x, float *y, unsigned n, float tol, unsigned *iters,
                                          unsigned max_iters, unsigned *done, cuasync::graph::condition c)
{
    if (*done) return;   // a copy of the body after the loop ended: c is 0 already
    const float residual = sweep(x, y, n);
    if (threadIdx.x == 0) {
        const unsigned k = *iters + 1;
        *iters = k;
        const bool more = residual > tol && k < max_iters;
        if (!more) *done = 1u;
        cuasync::graph::set_condition(c, more);
    }
}

extern "C" __global__ void scale(float *y, const float *x, float a, unsigned n)
{
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = a * x[i];
}
