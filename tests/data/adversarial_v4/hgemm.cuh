// Shared by the fp16 GEMM members: D[M,N] = A[M,K] @ B with A row-major half, B column-major
// half ([N, K] storage), fp32 accumulation on tensor cores (WMMA 16x16x16). A block of 128
// threads (4 warps, each 32x32) computes a 64x64 tile into shared memory; an epilogue stores
// it. M and N must be multiples of 64, K of 16.
#pragma once
#include <cuda_fp16.h>
#include <mma.h>
#include <stdint.h>

#define HT 64

// The block's fp32 tile, row-major 64x64, in `stage` (shared, 16 KiB); A and B as given.
__device__ __forceinline__ void hgemm_block_tile(const __half* A, const __half* B, int K, float* stage) {
    using namespace nvcuda;
    int warp = threadIdx.x >> 5, wy = warp >> 1, wx = warp & 1;
    long long row0 = (long long)blockIdx.y * HT + wy * 32, col0 = (long long)blockIdx.x * HT + wx * 32;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> c[2][2];
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) wmma::fill_fragment(c[i][j], 0.0f);
    for (int k = 0; k < K; k += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a[2];
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> b[2];
        for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(a[i], A + (row0 + 16 * i) * K + k, K);
        for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(b[j], B + (col0 + 16 * j) * K + k, K);
        for (int i = 0; i < 2; ++i)
            for (int j = 0; j < 2; ++j) wmma::mma_sync(c[i][j], a[i], b[j], c[i][j]);
    }
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j)
            wmma::store_matrix_sync(stage + (wy * 32 + 16 * i) * HT + wx * 32 + 16 * j, c[i][j], HT,
                                    wmma::mem_row_major);
    __syncthreads();
}

// Calls store(row, col, value) for every element of the block's tile.
template <typename Store>
__device__ __forceinline__ void hgemm_epilogue(const float* stage, Store store) {
    for (int e = threadIdx.x; e < HT * HT; e += blockDim.x)
        store(blockIdx.y * HT + e / HT, blockIdx.x * HT + e % HT, stage[e]);
}

// Copies the block's 64x64 tile of a row-major [.., N] half matrix from src to dst.
__device__ __forceinline__ void copy_tile_f16(const __half* src, __half* dst, int N) {
    for (int e = threadIdx.x; e < HT * HT / 8; e += blockDim.x) {
        int r = e / (HT / 8), c8 = e % (HT / 8);
        long long offset = (long long)(blockIdx.y * HT + r) * N + blockIdx.x * HT + c8 * 8;
        *(uint4*)(dst + offset) = *(const uint4*)(src + offset);
    }
}
