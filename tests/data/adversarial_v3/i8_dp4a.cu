// Correct: four int8 products per instruction with __dp4a on 32-bit loads (K % 4 == 0 and
// rows of K bytes keep every load 4-byte aligned).
#include "i8_gemm.cuh"

extern "C" __global__ void i8_dp4a(const int8_t* A, const int8_t* B, int32_t* D, int M, int N, int K) {
    int row = i8_row(), col = i8_col();
    if (row >= M || col >= N) return;
    const int* a = reinterpret_cast<const int*>(A + (long long)row * K);
    const int* b = reinterpret_cast<const int*>(B + (long long)col * K);
    int acc = 0;
    for (int k = 0; k < K / 4; ++k) acc = __dp4a(a[k], b[k], acc);
    D[(long long)row * N + col] = acc;
}
