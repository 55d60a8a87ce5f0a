// Broken (needs every block resident): x + y (fp16, __hadd) into scratch, a software grid
// barrier, then a copy to out by threads of other blocks (reversed order). 264 blocks of
// 1024 threads (at most 32 registers each, no shared memory) are exactly two per SM of a
// 132-SM H100 or H200, all resident only while nothing else holds an SM.
#include <cuda_fp16.h>
#include "v4common.cuh"

extern "C" __global__ void __launch_bounds__(1024, 2)
vh_grid_barrier(const __half* x, const __half* y, __half* tmp, __half* out, int n) {
    for (long long i = global_index(); i < n; i += grid_threads()) tmp[i] = __hadd(x[i], y[i]);
    software_grid_barrier();
    const unsigned short* bits = (const unsigned short*)tmp;
    unsigned short* dst = (unsigned short*)out;
    for (long long i = n - 1 - global_index(); i >= 0; i -= grid_threads()) dst[i] = ((volatile const unsigned short*)bits)[i];
}
