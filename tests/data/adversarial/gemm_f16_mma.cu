// Correct: fp16 GEMM D = A @ B (row-major) on tensor cores through the wmma API (mma.sync
// 16x16x16 tiles, fp32 accumulator), rounded to fp16 once at the store (expect passed).
// Each warp computes one 16x16 tile of D; a block of 2 x 2 warps covers 32 x 32, so M and N
// must be multiples of 32 and K a multiple of 16 (the manifest's launch fixes the sizes).
#include <cuda_fp16.h>
#include <mma.h>

using namespace nvcuda;

#define WMMA_SIZE 16
#define WARPS_PER_SIDE 2
#define BLOCK_SIDE (WMMA_SIZE * WARPS_PER_SIDE)

extern "C" __global__ void gemm_f16_mma(const __half* A, const __half* B, __half* D, int M, int N, int K) {
    // fp32 results pass through shared memory to be rounded to fp16: the element order
    // inside an accumulator fragment is unspecified, so it cannot be converted in place.
    // store_matrix_sync needs 256-bit alignment.
    __shared__ __align__(32) float staging[WARPS_PER_SIDE * WARPS_PER_SIDE][WMMA_SIZE * WMMA_SIZE];
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int tile_row = blockIdx.y * BLOCK_SIDE + (warp / WARPS_PER_SIDE) * WMMA_SIZE;
    int tile_col = blockIdx.x * BLOCK_SIDE + (warp % WARPS_PER_SIDE) * WMMA_SIZE;

    wmma::fragment<wmma::matrix_a, WMMA_SIZE, WMMA_SIZE, WMMA_SIZE, __half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, WMMA_SIZE, WMMA_SIZE, WMMA_SIZE, __half, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, WMMA_SIZE, WMMA_SIZE, WMMA_SIZE, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int k = 0; k < K; k += WMMA_SIZE) {
        wmma::load_matrix_sync(a, A + (long long)tile_row * K + k, K);
        wmma::load_matrix_sync(b, B + (long long)k * N + tile_col, N);
        wmma::mma_sync(acc, a, b, acc);
    }
    wmma::store_matrix_sync(staging[warp], acc, WMMA_SIZE, wmma::mem_row_major);
    __syncwarp();
    for (int e = lane; e < WMMA_SIZE * WMMA_SIZE; e += 32)
        D[(long long)(tile_row + e / WMMA_SIZE) * N + tile_col + e % WMMA_SIZE] = __float2half_rn(staging[warp][e]);
}
