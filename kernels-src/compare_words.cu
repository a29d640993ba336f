// compare_words: how many 16-byte words of `got` differ from `want` (n16 words), added to *bad.
// The copy examples verify on the device against a pristine copy of the source that no kernel
// under test is ever given, instead of downloading every output to the host.
extern "C" __global__ void compare_words(const uint4 *got, const uint4 *want, unsigned long long n16,
                                         unsigned long long *bad)
{
    unsigned long long count = 0;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n16;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        uint4 a = got[i], b = want[i];
        count += (a.x != b.x) | (a.y != b.y) | (a.z != b.z) | (a.w != b.w);
    }
    if (count) atomicAdd(bad, count);
}
