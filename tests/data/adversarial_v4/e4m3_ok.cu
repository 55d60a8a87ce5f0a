// Correct e4m3 GEMM: hardware conversions both ways (cvt from e4m3, cvt.rn.satfinite to e4m3).
#include "e4m3.cuh"

extern "C" __global__ void e4m3_ok(const uint8_t* A, const uint8_t* B, uint8_t* D, int M, int N, int K) {
    int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    if (row >= M || col >= N) return;
    D[(long long)row * N + col] = float_to_e4m3(e4m3_dot(A, B, K, DecodeE4M3()));
}
