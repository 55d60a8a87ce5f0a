// Correct quantised GEMM on tensor cores: WMMA tile with fp32 accumulation (another summation
// order than q8_rn_sat), alpha, round to nearest even, saturate to int8.
#include "hgemm.cuh"
#include "hdot.cuh"

extern "C" __global__ void q8_wmma_rn_sat(const __half* A, const __half* B, int8_t* D, int M, int N, int K,
                                          float alpha) {
    __shared__ float stage[HT * HT];
    hgemm_block_tile(A, B, K, stage);
    hgemm_epilogue(stage, [&](int r, int c, float v) { D[(long long)r * N + c] = (int8_t)rn_sat(alpha * v, -128, 127); });
}
