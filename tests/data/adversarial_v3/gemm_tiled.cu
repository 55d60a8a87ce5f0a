// Correct: the tiled fp32 GEMM with its K-tail mask (K = 520 = 32 tiles of 16 + 8).
#include "gemm_f32_tiled.cuh"

extern "C" __global__ void gemm_tiled(const float* A, const float* B, float* D, int M, int N, int K) {
    store_d(D, M, N, tiled_dot(A, B, M, N, K, true));
}
