// Broken (stress rows): eps left out, y = x / rms(x) * w. Rows of zeros give 0 * inf = NaN
// where the reference gives 0; rows whose mean square is far below eps are scaled by
// 1 / rms(x) instead of about 1 / sqrt(eps).
#include "common.cuh"

extern "C" __global__ void rms_no_eps(const float* x, const float* w, float* y, int cols, float eps) {
    __shared__ float scratch[32];
    const float* row = x + (long long)blockIdx.x * cols;
    float* dst = y + (long long)blockIdx.x * cols;
    float s = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) s = fmaf(row[j], row[j], s);
    float inv = rsqrtf(block_sum(s, scratch) / cols);
    for (int j = threadIdx.x; j < cols; j += blockDim.x) dst[j] = row[j] * inv * w[j];
}
