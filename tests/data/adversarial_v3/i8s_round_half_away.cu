// Broken (rounding): roundf rounds ties away from zero; the epilogue's cvt.rni (and the
// reference) round them to even. Off by one wherever alpha * sum is an odd multiple of 1/2.
#include "i8s_gemm.cuh"

extern "C" __global__ void i8s_round_half_away(const int8_t* A, const int8_t* B, int8_t* D, int M, int N, int K, float alpha) {
    if (i8_row() >= M || i8_col() >= N) return;
    int v = (int)roundf(i8s_scaled(A, B, K, alpha));
    D[(long long)i8_row() * N + i8_col()] = (int8_t)max(-128, min(127, v));
}
