// Correct (Welford): one warp per row. Each lane keeps a running count, mean and sum of
// squared deviations over its columns; lanes merge them with Chan's formula through
// shuffles, so no pass over the row is repeated for the statistics.
#include "common.cuh"

extern "C" __global__ void ln_welford_warp(const float* x, const float* w, const float* b, float* y,
                                           int rows, int cols, float eps) {
    long long r = (long long)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x & 31;
    if (r >= rows) return;
    const float* row = x + r * cols;
    float count = 0.0f, mean = 0.0f, m2 = 0.0f;
    for (int j = lane; j < cols; j += 32) {
        float v = row[j];
        count += 1.0f;
        float delta = v - mean;
        mean += delta / count;
        m2 = fmaf(delta, v - mean, m2);
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        float count_b = __shfl_xor_sync(0xffffffffu, count, offset);
        float mean_b = __shfl_xor_sync(0xffffffffu, mean, offset);
        float m2_b = __shfl_xor_sync(0xffffffffu, m2, offset);
        float total = count + count_b;  // every lane holds at least one column (cols >= 32)
        float delta = mean_b - mean;
        mean = fmaf(delta, count_b / total, mean);
        m2 = m2 + m2_b + delta * delta * (count * count_b / total);
        count = total;
    }
    float inv = rsqrtf(m2 / cols + eps);
    for (int j = lane; j < cols; j += 32) y[r * cols + j] = fmaf((row[j] - mean) * inv, w[j], b[j]);
}
