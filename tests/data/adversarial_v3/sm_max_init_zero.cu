// Broken (all-negative rows): the running max starts at 0 instead of -inf, so a row whose
// values are all negative is shifted by 0 instead of by its max. Softmax is unchanged by the
// shift in exact arithmetic; in fp32 exp(x) underflows (to subnormals below -87, to 0 below
// -103), so all-negative rows of large magnitude come out NaN (0 / 0) or inexact.
#include "common.cuh"

extern "C" __global__ void sm_max_init_zero(const float* x, float* out, int cols) {
    __shared__ float scratch[32];
    const float* row = x + (long long)blockIdx.x * cols;
    float* dst = out + (long long)blockIdx.x * cols;
    float m = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, row[j]);
    m = block_max(m, scratch);
    float s = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) s += expf(row[j] - m);
    s = block_sum(s, scratch);
    for (int j = threadIdx.x; j < cols; j += blockDim.x) dst[j] = expf(row[j] - m) / s;
}
