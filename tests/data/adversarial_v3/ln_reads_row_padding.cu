// Broken (reads past the end): the statistics loops run to the next multiple of the block
// size, as if rows were padded with zeros to 1024 columns. Every row's sums take in the first
// 24 values of the next row, and the last row's take in 24 floats past the end of x.
#include "common.cuh"

extern "C" __global__ void ln_reads_row_padding(const float* x, const float* w, const float* b, float* y,
                                                int cols, float eps) {
    __shared__ float scratch[32];
    int padded = (cols + blockDim.x - 1) / blockDim.x * blockDim.x;
    const float* row = x + (long long)blockIdx.x * cols;
    float* dst = y + (long long)blockIdx.x * cols;
    float s = 0.0f;
    for (int j = threadIdx.x; j < padded; j += blockDim.x) s += row[j];
    float mean = block_sum(s, scratch) / cols;
    float q = 0.0f;
    for (int j = threadIdx.x; j < padded; j += blockDim.x) {
        float d = row[j] - mean;
        q = fmaf(d, d, q);
    }
    float inv = rsqrtf(block_sum(q, scratch) / cols + eps);
    for (int j = threadIdx.x; j < cols; j += blockDim.x) dst[j] = fmaf((row[j] - mean) * inv, w[j], b[j]);
}
