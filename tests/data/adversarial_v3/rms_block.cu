// Correct: one block per row, sum of squares by a block reduction, y = x * rsqrt(mean + eps) * w.
#include "common.cuh"

extern "C" __global__ void rms_block(const float* x, const float* w, float* y, int cols, float eps) {
    __shared__ float scratch[32];
    const float* row = x + (long long)blockIdx.x * cols;
    float* dst = y + (long long)blockIdx.x * cols;
    float s = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) s = fmaf(row[j], row[j], s);
    float inv = rsqrtf(block_sum(s, scratch) / cols + eps);
    for (int j = threadIdx.x; j < cols; j += blockDim.x) dst[j] = row[j] * inv * w[j];
}
