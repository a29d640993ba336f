// The memory probe of cuasync.probe.memory: a dependent-load chain through device memory, so
// that each load waits for the one before it and the time per step is the load latency (what
// Little's law multiplies by bandwidth to give the bytes a pipeline must keep in flight).
// Each line of 128 bytes holds, in its first word, the index of the next line: `stride` lines
// further on (odd: the chain visits every line before it repeats), so no two steps share a line.

extern "C" __global__ void probe_chain(unsigned *buf, unsigned lines, unsigned stride)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < lines) buf[(unsigned long long)i * 32] = (unsigned)(((unsigned long long)i + stride) % lines);
}

// One thread follows the chain for `steps` loads from line `start`; __ldcg reads through L2
// only (L1 is bypassed), and the end of the chain is written so the loads cannot be dropped.
extern "C" __global__ void probe_chase(const unsigned *buf, unsigned start, unsigned steps, unsigned *out)
{
    unsigned j = start;
    for (unsigned s = 0; s < steps; ++s) j = __ldcg(buf + (unsigned long long)j * 32);
    out[0] = j;
}
