// Broken (needs every block resident): x + y into scratch, a software grid barrier, then a
// copy to out by threads of other blocks (reversed order). 264 blocks of 1024 threads (at
// most 32 registers each) are exactly two per SM of a 132-SM H100.
#include "v4common.cuh"

extern "C" __global__ void __launch_bounds__(1024, 2)
va_grid_barrier(const float* x, const float* y, float* tmp, float* out, int n) {
    for (long long i = global_index(); i < n; i += grid_threads()) tmp[i] = x[i] + y[i];
    software_grid_barrier();
    for (long long i = n - 1 - global_index(); i >= 0; i -= grid_threads()) out[i] = ((volatile float*)tmp)[i];
}
