// Correct: K staged through shared memory in tiles of 16 (K = 320, no tail), with both
// barriers.
#include "i8_gemm.cuh"

extern "C" __global__ void i8_tiled(const int8_t* A, const int8_t* B, int32_t* D, int M, int N, int K) {
    __shared__ int a_tile[I8_TILE][I8_TILE];
    __shared__ int b_tile[I8_TILE][I8_TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = i8_row(), col = i8_col();
    int a_load_row = blockIdx.y * I8_TILE + ty, b_load_col = blockIdx.x * I8_TILE + ty;
    int acc = 0;
    for (int k0 = 0; k0 < K; k0 += I8_TILE) {
        // thread (ty, tx) loads A[a_load_row, k0 + tx] and column b_load_col of B at k0 + tx
        a_tile[ty][tx] = (a_load_row < M && k0 + tx < K) ? A[(long long)a_load_row * K + k0 + tx] : 0;
        b_tile[ty][tx] = (b_load_col < N && k0 + tx < K) ? B[(long long)b_load_col * K + k0 + tx] : 0;
        __syncthreads();
        for (int k = 0; k < I8_TILE; ++k) acc += a_tile[ty][k] * b_tile[tx][k];
        __syncthreads();
    }
    if (row < M && col < N) D[(long long)row * N + col] = acc;
}
