// Correct: no shared memory; a grid-stride loop over the outputs, each a sequential fmaf
// chain over k = 0 .. K-1 (a different summation order from the tiled members).
#include "common.cuh"

extern "C" __global__ void gemm_grid_stride_fma(const float* A, const float* B, float* D, int M, int N, int K) {
    long long total = (long long)M * N;
    for (long long i = global_index(); i < total; i += grid_threads()) {
        long long row = i / N, col = i % N;
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc = fmaf(A[row * K + k], B[(long long)k * N + col], acc);
        D[i] = acc;
    }
}
