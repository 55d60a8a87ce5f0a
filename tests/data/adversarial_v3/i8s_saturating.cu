// Correct: round half to even (cvt.rni), then clamp to [-128, 127], as cvt.rni.sat.s8 does.
#include "i8s_gemm.cuh"

extern "C" __global__ void i8s_saturating(const int8_t* A, const int8_t* B, int8_t* D, int M, int N, int K, float alpha) {
    if (i8_row() >= M || i8_col() >= N) return;
    int v = __float2int_rn(i8s_scaled(A, B, K, alpha));
    D[(long long)i8_row() * N + i8_col()] = (int8_t)max(-128, min(127, v));
}
