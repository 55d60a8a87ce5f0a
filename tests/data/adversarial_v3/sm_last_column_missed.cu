// Broken (max in the last column): the max loop stops one column short, and exp(x - max)
// is clamped to at most 1 "since x <= max". Where the last column holds the row's largest
// value, its exp(x - max) > 1 is clamped to 1 and the whole row is wrong.
#include "common.cuh"

extern "C" __global__ void sm_last_column_missed(const float* x, float* out, int cols) {
    __shared__ float scratch[32];
    const float* row = x + (long long)blockIdx.x * cols;
    float* dst = out + (long long)blockIdx.x * cols;
    float m = -INFINITY;
    for (int j = threadIdx.x; j < cols - 1; j += blockDim.x) m = fmaxf(m, row[j]);
    m = block_max(m, scratch);
    float s = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) s += fminf(expf(row[j] - m), 1.0f);
    s = block_sum(s, scratch);
    for (int j = threadIdx.x; j < cols; j += blockDim.x) dst[j] = fminf(expf(row[j] - m), 1.0f) / s;
}
