// Broken (stress: full-range integers): accumulates in int16. Right while |sum| < 2^15,
// e.g. for int8 inputs in -4..4; products of full-range int8 values (up to 2^14) wrap it.
#include "i8_gemm.cuh"

extern "C" __global__ void i8_int16_accumulator(const int8_t* A, const int8_t* B, int32_t* D, int M, int N, int K) {
    int row = i8_row(), col = i8_col();
    if (row >= M || col >= N) return;
    const int8_t* a = A + (long long)row * K;
    const int8_t* b = B + (long long)col * K;
    int16_t acc = 0;
    for (int k = 0; k < K; ++k) acc = (int16_t)(acc + (int16_t)(a[k] * b[k]));
    D[(long long)row * N + col] = acc;
}
