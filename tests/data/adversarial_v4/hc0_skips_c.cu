// Correct fp16 D = alpha * A @ B + beta * C (WMMA, fp32 accumulation): C is read only when
// beta != 0.
#include "hgemm.cuh"

extern "C" __global__ void hc0_skips_c(const __half* A, const __half* B, const __half* C, __half* D, int M, int N,
                                       int K, float alpha, float beta) {
    __shared__ float stage[HT * HT];
    hgemm_block_tile(A, B, K, stage);
    hgemm_epilogue(stage, [&](int r, int c, float v) {
        long long o = (long long)r * N + c;
        D[o] = __float2half_rn(beta != 0.0f ? fmaf(beta, __half2float(C[o]), alpha * v) : alpha * v);
    });
}
