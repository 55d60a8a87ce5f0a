// Correct rounded integer GEMM at K = 4096 on tensor cores (WMMA, fp32 accumulation), round
// to nearest even into int32.
#include "hgemm.cuh"

extern "C" __global__ void r32_wmma(const __half* A, const __half* B, int32_t* D, int M, int N, int K) {
    __shared__ float stage[HT * HT];
    hgemm_block_tile(A, B, K, stage);
    hgemm_epilogue(stage, [&](int r, int c, float v) { D[(long long)r * N + c] = __float2int_rn(v); });
}
