// graph_steps.cu — small kernels for CUDA graphs and programmatic dependent launch
// (spec/core/graph_spec.lua, examples/bench_graph.lua).
//   empty()                      nothing: a launch's cost alone
//   tick(c)                      one thread adds 1 to *c: a launch that leaves a count to verify
//   axpy(y, x, a, n)             y[i] += a * x[i]
//   pdl_producer(buf, n, v)      buf[i] = v ^ (i * 2654435761), after pdl::launch_dependents()
//   pdl_consumer(out, buf, n)    its own prologue, pdl::wait(), then out[i] = buf[i] * 3 + 1
//   pdl_hang(t0, early)          block 0 thread 0 records %globaltimer in t0[0], calls
//                                pdl::launch_dependents() when early != 0, then waits forever in a
//                                watched wait (the watchdog leaves it by PTX exit)
//   pdl_after(t, flag)           t[0] = %globaltimer at its start, pdl::wait(), t[1] = %globaltimer,
//                                flag[0] = 1: whether, and when, a dependent's wait was released
#include <cuasync/pdl.cuh>
#include <cuasync/watchdog.cuh>

typedef unsigned long long u64;

extern "C" __global__ void empty() {}

extern "C" __global__ void tick(unsigned *c)
{
    if (blockIdx.x == 0 && threadIdx.x == 0) atomicAdd(c, 1u);
}

extern "C" __global__ void axpy(float *y, const float *x, float a, unsigned n)
{
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] += a * x[i];
}

extern "C" __global__ void pdl_producer(unsigned *buf, unsigned n, unsigned v)
{
    cuasync::pdl::launch_dependents();   // the consumer may start its prologue now
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        buf[i] = v ^ (i * 2654435761u);
}

extern "C" __global__ void pdl_consumer(unsigned *out, const unsigned *buf, unsigned n)
{
    const unsigned first = blockIdx.x * blockDim.x + threadIdx.x, step = gridDim.x * blockDim.x;
    cuasync::pdl::wait();                // the producer's writes are visible after this
    for (unsigned i = first; i < n; i += step) out[i] = buf[i] * 3u + 1u;
}

extern "C" __global__ void pdl_hang(u64 *t0, unsigned early)
{
    if (blockIdx.x == 0 && threadIdx.x == 0) t0[0] = cuasync::watchdog::now();
    if (early) cuasync::pdl::launch_dependents();
    cuasync::watchdog::spin_until([] { return false; });
}

extern "C" __global__ void pdl_after(u64 *t, unsigned *flag)
{
    if (blockIdx.x == 0 && threadIdx.x == 0) t[0] = cuasync::watchdog::now();
    cuasync::pdl::wait();
    if (blockIdx.x == 0 && threadIdx.x == 0) { t[1] = cuasync::watchdog::now(); flag[0] = 1u; }
}
