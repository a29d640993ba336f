// wgmma_desc.cu — the descriptors wgmma.cuh encodes, written out for spec/kernels/gemm_spec.lua to compare
// with its Lua twin (cuasync.kernels.gemm.descriptor): desc_encode for given fields, and
// desc_kmajor for a tile at a 1024-aligned shared address, per swizzle span.
#include <cuasync/wgmma.cuh>

extern "C" __global__ void descriptors(const unsigned *fields, unsigned n, unsigned long long *out, unsigned *tile_address)
{
    __shared__ __align__(1024) unsigned char tile[2048];
    namespace wg = cuasync::wgmma;
    for (unsigned i = 0; i < n; ++i)
        out[i] = wg::desc_encode(fields[4 * i], fields[4 * i + 1], fields[4 * i + 2], fields[4 * i + 3]);
    out[n] = wg::desc_kmajor(tile, 128u);
    out[n + 1] = wg::desc_kmajor(tile, 64u);
    out[n + 2] = wg::desc_kmajor(tile, 32u);
    out[n + 3] = wg::desc_advance(wg::desc_kmajor(tile, 128u), 96u);
    *tile_address = cuasync::smem_addr(tile);
}
