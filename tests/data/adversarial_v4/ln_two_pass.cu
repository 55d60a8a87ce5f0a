// Correct LayerNorm: one block per row, the mean, then the variance of x - mean.
#include "norm4.cuh"

extern "C" __global__ void ln_two_pass(const float* x, const float* w, const float* b, float* y, int cols, float eps) {
    __shared__ float scratch[32];
    const float* row = x + (long long)blockIdx.x * cols;
    float s = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) s += row[j];
    float mean = block_sum(s, scratch) / cols;
    float v = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) v += (row[j] - mean) * (row[j] - mean);
    float r = rsqrtf(block_sum(v, scratch) / cols + eps);
    for (int j = threadIdx.x; j < cols; j += blockDim.x)
        y[(long long)blockIdx.x * cols + j] = (row[j] - mean) * r * w[j] + b[j];
}
