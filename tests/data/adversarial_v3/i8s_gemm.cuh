// Shared by the saturating int8 GEMM members: D = sat_int8(round_half_even(alpha * (A @ B)))
// with A row-major int8, B column-major int8, D row-major int8, int32 accumulation and
// alpha = 2^-9 as an f32 argument (alpha * sum is exact in fp32: |sum| < 2^24).
#include "i8_gemm.cuh"

__device__ __forceinline__ float i8s_scaled(const int8_t* A, const int8_t* B, int K, float alpha) {
    return (float)i8_dot(A, B, K, i8_row(), i8_col()) * alpha;
}
