// Broken (layout): reads C column-major as it should but stores D row-major; with M = N every
// element is written, at the transposed place.
#include "k1_gemm.cuh"

extern "C" __global__ void k1_row_major_store(const float* A, const float* B, const float* C, float* D,
                                              int M, int N, float alpha, float beta) {
    FOR_EACH_ELEMENT_OF_D(M, N) {
        long long m = i % M, n = i / M;
        D[m * N + n] = fmaf(alpha, A[m] * B[n], beta * C[i]);
    }
}
