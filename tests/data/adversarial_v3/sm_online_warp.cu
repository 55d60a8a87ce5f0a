// Correct (online softmax): one warp per row. Each lane keeps a running max m and a running
// sum s of exp(x - m), rescaling s when m grows; lanes merge (m, s) pairs with shuffles.
// Masked entries (-inf) contribute 0 and never produce exp(-inf - -inf) = NaN; a fully
// masked row still ends as exp(-inf - -inf) / 0 = NaN, as the float64 reference does.
#include "common.cuh"

__device__ __forceinline__ float rescale(float m_old, float m_new) {
    return m_old == -INFINITY ? 0.0f : expf(m_old - m_new);
}

extern "C" __global__ void sm_online_warp(const float* x, float* out, int rows, int cols) {
    int warps_per_block = blockDim.x / 32;
    long long r = (long long)blockIdx.x * warps_per_block + threadIdx.x / 32;
    int lane = threadIdx.x & 31;
    if (r >= rows) return;
    const float* row = x + r * cols;
    float m = -INFINITY, s = 0.0f;
    for (int j = lane; j < cols; j += 32) {
        float v = row[j];
        float m_new = fmaxf(m, v);
        s = s * rescale(m, m_new) + (v == -INFINITY ? 0.0f : expf(v - m_new));
        m = m_new;
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        float m_other = __shfl_xor_sync(0xffffffffu, m, offset);
        float s_other = __shfl_xor_sync(0xffffffffu, s, offset);
        float m_new = fmaxf(m, m_other);
        s = s * rescale(m, m_new) + s_other * rescale(m_other, m_new);
        m = m_new;
    }
    for (int j = lane; j < cols; j += 32) out[r * cols + j] = expf(row[j] - m) / s;
}
