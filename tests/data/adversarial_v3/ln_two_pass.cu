// Correct: one block per row; the mean, then the variance as the mean of (x - mean)^2 (two
// passes over the row), y = (x - mean) * rsqrt(var + eps) * w + b.
#include "common.cuh"

extern "C" __global__ void ln_two_pass(const float* x, const float* w, const float* b, float* y, int cols, float eps) {
    __shared__ float scratch[32];
    const float* row = x + (long long)blockIdx.x * cols;
    float* dst = y + (long long)blockIdx.x * cols;
    float s = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) s += row[j];
    float mean = block_sum(s, scratch) / cols;
    float q = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        float d = row[j] - mean;
        q = fmaf(d, d, q);
    }
    float inv = rsqrtf(block_sum(q, scratch) / cols + eps);
    for (int j = threadIdx.x; j < cols; j += blockDim.x) dst[j] = fmaf((row[j] - mean) * inv, w[j], b[j]);
}
