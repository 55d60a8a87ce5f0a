// Shared by the softmax members: x and out are rows x cols fp32, row-major; one block of
// blockDim.x threads per row (grid = rows) unless a member says otherwise. The correct
// row softmax in three passes: the row max, the sum of exp(x - max), then exp(x - max) / sum.
// `EXP` lets a member swap the exponential.
#pragma once
#include "common.cuh"

template <typename Exp>
__device__ __forceinline__ void softmax_row_three_pass(const float* x, float* out, int cols, Exp exp_fn) {
    __shared__ float scratch[32];
    const float* row = x + (long long)blockIdx.x * cols;
    float* dst = out + (long long)blockIdx.x * cols;
    float m = -INFINITY;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, row[j]);
    m = block_max(m, scratch);
    float s = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) s += exp_fn(row[j] - m);
    s = block_sum(s, scratch);
    for (int j = threadIdx.x; j < cols; j += blockDim.x) dst[j] = exp_fn(row[j] - m) / s;
}

struct ExpF {
    __device__ float operator()(float v) const { return expf(v); }
};
