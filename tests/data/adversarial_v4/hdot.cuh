// Shared by the one-output-per-thread fp16 GEMM members: A row-major [M, K] half, B column-
// major ([N, K] storage) half, so both operands of an output are contiguous along K; blocks
// of 16 x 16 threads over a ceil(N/16) x ceil(M/16) grid. hdot is the fp32 fmaf chain over
// K; `nz` reports whether any of the A row's values was nonzero.
#pragma once
#include <cuda_fp16.h>
#include <stdint.h>

__device__ __forceinline__ int h_row() { return blockIdx.y * 16 + threadIdx.y; }
__device__ __forceinline__ int h_col() { return blockIdx.x * 16 + threadIdx.x; }

__device__ __forceinline__ float hdot(const __half* A, const __half* B, int K, bool* nz) {
    const __half* a = A + (long long)h_row() * K;
    const __half* b = B + (long long)h_col() * K;
    float acc = 0.0f;
    bool any = false;
    for (int k = 0; k < K; ++k) {
        float av = __half2float(a[k]);
        any |= av != 0.0f;
        acc = fmaf(av, __half2float(b[k]), acc);
    }
    *nz = any;
    return acc;
}

// round to nearest even, saturate to [lo, hi] (cvt.rni.sat)
__device__ __forceinline__ int rn_sat(float v, int lo, int hi) { return max(lo, min(hi, __float2int_rn(v))); }
