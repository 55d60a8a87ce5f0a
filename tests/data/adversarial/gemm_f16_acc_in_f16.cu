// A real-world lower-precision kernel: the tiled fp16 GEMM accumulating in fp16 (__hfma),
// so every one of the K steps rounds to fp16 and large partial sums can overflow to
// infinity. Its error is thousands of times what an fp16 GEMM with an fp32 accumulator
// may make, so the verifier must give it wrong_result (see gemm_f16.yaml).
#include "gemm_f16_tiled.cuh"

extern "C" __global__ void gemm_f16_acc_in_f16(const __half* A, const __half* B, __half* D, int M, int N, int K) {
    __shared__ __half a_tile[GEMM_TILE][GEMM_TILE];
    __shared__ __half b_tile[GEMM_TILE][GEMM_TILE];
    int row = blockIdx.y * GEMM_TILE + threadIdx.y;
    int col = blockIdx.x * GEMM_TILE + threadIdx.x;
    __half acc = __float2half(0.0f);
    for (int k0 = 0; k0 < K; k0 += GEMM_TILE) {
        load_tiles(A, B, M, N, K, k0, a_tile, b_tile);
        __syncthreads();
        for (int k = 0; k < GEMM_TILE; ++k) acc = __hfma(a_tile[threadIdx.y][k], b_tile[k][threadIdx.x], acc);
        __syncthreads();  // the next iteration overwrites the tiles
    }
    if (row < M && col < N) D[(long long)row * N + col] = acc;
}
