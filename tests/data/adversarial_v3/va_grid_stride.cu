// Correct: out = x + y with a grid-stride loop (fewer threads than elements).
#include "common.cuh"

extern "C" __global__ void va_grid_stride(const float* x, const float* y, float* out, int n) {
    for (long long i = global_index(); i < n; i += grid_threads()) out[i] = x[i] + y[i];
}
