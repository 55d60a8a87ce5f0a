// Correct (the honest fp32 vector add): grid-stride, one IEEE add per element.
#include "v4common.cuh"

extern "C" __global__ void va_plain(const float* x, const float* y, float* out, int n) {
    for (long long i = global_index(); i < n; i += grid_threads()) out[i] = x[i] + y[i];
}
