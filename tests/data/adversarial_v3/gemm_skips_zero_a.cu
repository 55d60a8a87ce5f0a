// Broken (NaN/Inf): skips the multiply-add wherever A[row, k] is zero, a "sparsity" shortcut
// that is exact for finite B but drops 0 * inf = NaN and 0 * NaN = NaN, which IEEE (and the
// float64 reference) keep.
#include "gemm_f32_tiled.cuh"

extern "C" __global__ void gemm_skips_zero_a(const float* A, const float* B, float* D, int M, int N, int K) {
    __shared__ float a_tile[TILE][TILE];
    __shared__ float b_tile[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        a_tile[ty][tx] = (row < M && k0 + tx < K) ? A[(long long)row * K + k0 + tx] : 0.0f;
        b_tile[ty][tx] = (col < N && k0 + ty < K) ? B[(long long)(k0 + ty) * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k) {
            float a = a_tile[ty][k];
            if (a != 0.0f) acc = fmaf(a, b_tile[k][tx], acc);
        }
        __syncthreads();
    }
    store_d(D, M, N, acc);
}
