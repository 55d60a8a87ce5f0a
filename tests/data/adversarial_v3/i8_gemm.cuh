// Shared by the int8 GEMM members: D[M,N] = A[M,K] @ B with A row-major int8 and B stored
// column-major ([N, K], layout_b col: each column of B is K contiguous bytes), products
// accumulated exactly. One output element per thread, 16 x 16 blocks over a
// ceil(N/16) x ceil(M/16) grid; `store` converts the int32 sum to D's type.
#pragma once
#include <stdint.h>

#define I8_TILE 16

__device__ __forceinline__ int i8_row() { return blockIdx.y * I8_TILE + threadIdx.y; }
__device__ __forceinline__ int i8_col() { return blockIdx.x * I8_TILE + threadIdx.x; }

__device__ __forceinline__ int i8_dot(const int8_t* A, const int8_t* B, int K, int row, int col) {
    const int8_t* a = A + (long long)row * K;
    const int8_t* b = B + (long long)col * K;
    int acc = 0;
    for (int k = 0; k < K; ++k) acc += (int)a[k] * (int)b[k];
    return acc;
}
