// Broken (consistently skewed): the tiled GEMM scaled by 1 + 1e-4, the same on every run and
// input. Listed first in its group, beside correct members.
#include "gemm_f32_tiled.cuh"

extern "C" __global__ void gemm_skewed(const float* A, const float* B, float* D, int M, int N, int K) {
    store_d(D, M, N, tiled_dot(A, B, M, N, K, true) * 1.0001f);
}
