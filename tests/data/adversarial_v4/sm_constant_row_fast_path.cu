// Correct, with a fast path that only stress rows take: a row whose elements all equal one
// finite value gets 1/cols everywhere (bit for bit what the three passes give: exp(0) = 1,
// a sum of cols ones is exact), after one pass instead of three. The stress trial's
// constant rows take it; normal and uniform rows never do, so its honest time is
// sm_three_pass's plus the equality test.
#include "softmax4.cuh"

extern "C" __global__ void sm_constant_row_fast_path(const float* x, float* out, int cols) {
    __shared__ float scratch[32];
    const float* row = x + (long long)blockIdx.x * cols;
    float* dst = out + (long long)blockIdx.x * cols;
    float first = row[0], m = -INFINITY;
    int same = 1;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        float v = row[j];
        m = fmaxf(m, v);
        same &= v == first;
    }
    if (__syncthreads_and(same) && isfinite(first)) {
        float p = 1.0f / (float)cols;
        for (int j = threadIdx.x; j < cols; j += blockDim.x) dst[j] = p;
        return;
    }
    softmax_with_shift(row, dst, cols, block_max(m, scratch), scratch);
}
