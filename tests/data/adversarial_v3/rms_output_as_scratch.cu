// Correct but unusual: the squares are first written into the output row, and the block
// sums them back from there in another order (each thread reads what other threads wrote,
// after a barrier), before the output is overwritten with the result. It reads its output
// only after writing it, so no poison ever reaches the result.
#include "common.cuh"

extern "C" __global__ void rms_output_as_scratch(const float* x, const float* w, float* y, int cols, float eps) {
    __shared__ float scratch[32];
    const float* row = x + (long long)blockIdx.x * cols;
    float* dst = y + (long long)blockIdx.x * cols;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) dst[j] = row[j] * row[j];
    __syncthreads();  // makes the block's global writes visible to the block
    float s = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) s += dst[cols - 1 - j];
    float inv = rsqrtf(block_sum(s, scratch) / cols + eps);  // its barriers end every read above
    for (int j = threadIdx.x; j < cols; j += blockDim.x) dst[j] = row[j] * inv * w[j];
}
