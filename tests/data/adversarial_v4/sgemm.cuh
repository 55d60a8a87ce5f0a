// Shared by the fp32 GEMM members: D[M,N] = A[M,K] @ B[K,N], all row-major fp32, a
// register-blocked SIMT kernel: 256 threads compute a 64x64 tile, 4x4 outputs each, over
// K in chunks of 16 staged in shared memory. `k_begin`/`k_end` restrict the sum (split-K).
// `nz[i]`: whether any A value of the thread's row i (in [k_begin, k_end)) was nonzero.
// SYNC_AFTER_LOAD false leaves out the barrier between storing a chunk and reading it.
#pragma once
#include <stdint.h>

#define ST 64

template <bool SYNC_AFTER_LOAD>
__device__ __forceinline__ void sgemm_block(const float* A, const float* B, int M, int N, int K, int k_begin,
                                            int k_end, float acc[4][4], bool nz[4]) {
    __shared__ float As[16][ST];
    __shared__ float Bs[16][ST];
    int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
    int row0 = blockIdx.y * ST, col0 = blockIdx.x * ST;
    for (int i = 0; i < 4; ++i) {
        nz[i] = false;
        for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;
    }
    for (int k0 = k_begin; k0 < k_end; k0 += 16) {
        for (int i = 0; i < 4; ++i) {
            int idx = tid + i * 256;
            int ar = idx >> 4, ac = idx & 15, br = idx >> 6, bc = idx & 63;
            As[ac][ar] = (row0 + ar < M && k0 + ac < k_end) ? A[(long long)(row0 + ar) * K + k0 + ac] : 0.0f;
            Bs[br][bc] = (k0 + br < k_end && col0 + bc < N) ? B[(long long)(k0 + br) * N + col0 + bc] : 0.0f;
        }
        if (SYNC_AFTER_LOAD) __syncthreads();
        for (int k = 0; k < 16; ++k) {
            float a[4], b[4];
            for (int i = 0; i < 4; ++i) { a[i] = As[k][ty * 4 + i]; nz[i] |= a[i] != 0.0f; }
            for (int j = 0; j < 4; ++j) b[j] = Bs[k][tx * 4 + j];
            for (int i = 0; i < 4; ++i)
                for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();  // the next chunk overwrites the tiles
    }
}

__device__ __forceinline__ int s_row(int i) { return blockIdx.y * ST + (threadIdx.x >> 4) * 4 + i; }
__device__ __forceinline__ int s_col(int j) { return blockIdx.x * ST + (threadIdx.x & 15) * 4 + j; }

__device__ __forceinline__ void sgemm_store(float* D, int M, int N, const float acc[4][4]) {
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j)
            if (s_row(i) < M && s_col(j) < N) D[(long long)s_row(i) * N + s_col(j)] = acc[i][j];
}

// Copies the block's 64x64 tile of a row-major [.., N] float matrix.
__device__ __forceinline__ void copy_tile_f32(const float* src, float* dst, int N) {
    for (int e = threadIdx.x; e < ST * ST / 4; e += blockDim.x) {
        int r = e / (ST / 4), c4 = e % (ST / 4);
        long long offset = (long long)(blockIdx.y * ST + r) * N + blockIdx.x * ST + c4 * 4;
        *(float4*)(dst + offset) = *(const float4*)(src + offset);
    }
}
