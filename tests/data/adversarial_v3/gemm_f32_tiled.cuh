// Shared by the fp32 GEMM members: D[M,N] = A[M,K] @ B[K,N], every matrix row-major fp32,
// computed by a shared-memory tiled kernel with one output element per thread: blocks of
// TILE x TILE threads over a ceil(N/TILE) x ceil(M/TILE) grid. `mask_k` false leaves out the
// K-tail check of the loads (tiles then read past column K of A and row K of B).
#pragma once

#define TILE 16

__device__ __forceinline__ float tiled_dot(const float* A, const float* B, int M, int N, int K, bool mask_k) {
    __shared__ float a_tile[TILE][TILE];
    __shared__ float b_tile[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        int a_col = k0 + tx, b_row = k0 + ty;
        a_tile[ty][tx] = (row < M && (!mask_k || a_col < K)) ? A[(long long)row * K + a_col] : 0.0f;
        b_tile[ty][tx] = (col < N && (!mask_k || b_row < K)) ? B[(long long)b_row * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k) acc = fmaf(a_tile[ty][k], b_tile[k][tx], acc);
        __syncthreads();  // the next iteration overwrites the tiles
    }
    return acc;
}

__device__ __forceinline__ void store_d(float* D, int M, int N, float value) {
    int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    if (row < M && col < N) D[(long long)row * N + col] = value;
}
