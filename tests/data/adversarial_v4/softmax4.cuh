// Shared by the softmax members: x and out are rows x cols fp32, row-major, one block of
// blockDim.x threads per row (grid = rows) unless a member says otherwise. The honest row
// softmax in three passes (max, sum of exp(x - max), exp(x - max) / sum), with the shift and
// the column ranges of each pass as parameters for the members that get them wrong.
#pragma once
#include "v4common.cuh"

// max over columns [lo, hi) of the row, reduced over the block
__device__ __forceinline__ float row_max(const float* row, int lo, int hi, float* scratch) {
    float m = -INFINITY;
    for (int j = lo + threadIdx.x; j < hi; j += blockDim.x) m = fmaxf(m, row[j]);
    return block_max(m, scratch);
}

__device__ __forceinline__ void softmax_with_shift(const float* row, float* dst, int cols, float m, float* scratch) {
    float s = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) s += expf(row[j] - m);
    s = block_sum(s, scratch);
    for (int j = threadIdx.x; j < cols; j += blockDim.x) dst[j] = expf(row[j] - m) / s;
}

__device__ __forceinline__ void softmax_row(const float* x, float* out, int cols, long long r, float* scratch) {
    const float* row = x + r * cols;
    softmax_with_shift(row, out + r * cols, cols, row_max(row, 0, cols, scratch), scratch);
}
