// Correct but unusual: accumulates in fp32. Every product (|p| <= 2^14) and every partial
// sum (|s| <= K 2^14 = 5,242,880 < 2^24 at K = 320) is an integer fp32 holds exactly, so
// the sum is exact and converts back without rounding.
#include "i8_gemm.cuh"

extern "C" __global__ void i8_float_accumulator(const int8_t* A, const int8_t* B, int32_t* D, int M, int N, int K) {
    int row = i8_row(), col = i8_col();
    if (row >= M || col >= N) return;
    const int8_t* a = A + (long long)row * K;
    const int8_t* b = B + (long long)col * K;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc = fmaf((float)a[k], (float)b[k], acc);
    D[(long long)row * N + col] = __float2int_rn(acc);
}
