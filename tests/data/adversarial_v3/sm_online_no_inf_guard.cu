// Broken (-inf masking): sm_online_warp without its guards. A lane whose first values are
// -inf computes exp(-inf - -inf) = NaN and poisons its whole row; unmasked rows are right.
#include "common.cuh"

extern "C" __global__ void sm_online_no_inf_guard(const float* x, float* out, int rows, int cols) {
    int warps_per_block = blockDim.x / 32;
    long long r = (long long)blockIdx.x * warps_per_block + threadIdx.x / 32;
    int lane = threadIdx.x & 31;
    if (r >= rows) return;
    const float* row = x + r * cols;
    float m = -INFINITY, s = 0.0f;
    for (int j = lane; j < cols; j += 32) {
        float v = row[j];
        float m_new = fmaxf(m, v);
        s = s * expf(m - m_new) + expf(v - m_new);
        m = m_new;
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        float m_other = __shfl_xor_sync(0xffffffffu, m, offset);
        float s_other = __shfl_xor_sync(0xffffffffu, s, offset);
        float m_new = fmaxf(m, m_other);
        s = s * expf(m - m_new) + s_other * expf(m_other - m_new);
        m = m_new;
    }
    for (int j = lane; j < cols; j += 32) out[r * cols + j] = expf(row[j] - m) / s;
}
