// Correct: a fixed grid that strides over n, so each thread handles several elements.
#include "common.cuh"

extern "C" __global__ void add_grid_stride(const float* __restrict__ x, const float* __restrict__ y,
                                           float* __restrict__ out, int n) {
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = global_index(); i < n; i += stride) out[i] = x[i] + y[i];
}
