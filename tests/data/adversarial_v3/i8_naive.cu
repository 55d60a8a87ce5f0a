// Correct: int32 accumulation, one output per thread.
#include "i8_gemm.cuh"

extern "C" __global__ void i8_naive(const int8_t* A, const int8_t* B, int32_t* D, int M, int N, int K) {
    int row = i8_row(), col = i8_col();
    if (row < M && col < N) D[(long long)row * N + col] = i8_dot(A, B, K, row, col);
}
