// Correct quantised GEMM: fp32 fmaf chain, alpha, round to nearest even, saturate to int8.
#include "hdot.cuh"

extern "C" __global__ void q8_rn_sat(const __half* A, const __half* B, int8_t* D, int M, int N, int K, float alpha) {
    if (h_row() >= M || h_col() >= N) return;
    bool nz;
    D[(long long)h_row() * N + h_col()] = (int8_t)rn_sat(alpha * hdot(A, B, K, &nz), -128, 127);
}
