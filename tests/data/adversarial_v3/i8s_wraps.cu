// Broken (no saturation): the int32 result is truncated to its low byte, so values beyond
// [-128, 127] wrap around instead of saturating.
#include "i8s_gemm.cuh"

extern "C" __global__ void i8s_wraps(const int8_t* A, const int8_t* B, int8_t* D, int M, int N, int K, float alpha) {
    if (i8_row() >= M || i8_col() >= N) return;
    D[(long long)i8_row() * N + i8_col()] = (int8_t)__float2int_rn(i8s_scaled(A, B, K, alpha));
}
