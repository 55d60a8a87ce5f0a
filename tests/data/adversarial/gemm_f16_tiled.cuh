// Shared by the fp16 GEMM members: D[M,N] = A[M,K] @ B[K,N], every matrix fp16 and
// row-major, computed by a plain shared-memory tiled kernel (no tensor cores), one output
// element per thread, launched with GEMM_TILE x GEMM_TILE blocks over a
// ceil(N/GEMM_TILE) x ceil(M/GEMM_TILE) grid. Tiles past the matrix edges load zeros.
#pragma once
#include <cuda_fp16.h>

#define GEMM_TILE 16

// Stage one GEMM_TILE x GEMM_TILE tile of A (rows of this block, columns k0..) and one of B
// (rows k0.., columns of this block) in shared memory.
__device__ __forceinline__ void load_tiles(const __half* A, const __half* B, int M, int N, int K,
                                           int k0, __half (*a_tile)[GEMM_TILE],
                                           __half (*b_tile)[GEMM_TILE]) {
    int tx = threadIdx.x, ty = threadIdx.y;
    int a_row = blockIdx.y * GEMM_TILE + ty, a_col = k0 + tx;
    int b_row = k0 + ty, b_col = blockIdx.x * GEMM_TILE + tx;
    a_tile[ty][tx] = (a_row < M && a_col < K) ? A[(long long)a_row * K + a_col] : __float2half(0.0f);
    b_tile[ty][tx] = (b_row < K && b_col < N) ? B[(long long)b_row * N + b_col] : __float2half(0.0f);
}

// The tiled product with an fp32 accumulator, scaled by `scale` before the one rounding to
// fp16 at the store (scale is 1 for a correct kernel).
__device__ __forceinline__ void gemm_f16_tiled_f32_accumulate(const __half* A, const __half* B, __half* D,
                                                              int M, int N, int K, float scale) {
    __shared__ __half a_tile[GEMM_TILE][GEMM_TILE];
    __shared__ __half b_tile[GEMM_TILE][GEMM_TILE];
    int row = blockIdx.y * GEMM_TILE + threadIdx.y;
    int col = blockIdx.x * GEMM_TILE + threadIdx.x;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += GEMM_TILE) {
        load_tiles(A, B, M, N, K, k0, a_tile, b_tile);
        __syncthreads();
        for (int k = 0; k < GEMM_TILE; ++k)
            acc = fmaf(__half2float(a_tile[threadIdx.y][k]), __half2float(b_tile[k][threadIdx.x]), acc);
        __syncthreads();  // the next iteration overwrites the tiles
    }
    if (row < M && col < N) D[(long long)row * N + col] = __float2half_rn(acc * scale);
}
