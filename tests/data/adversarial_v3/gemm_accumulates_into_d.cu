// Broken (reads its own output): split-K that adds each K range's partial product straight
// into D, assuming D starts at zero. It never clears D, so the result carries the poison.
#include "common.cuh"

extern "C" __global__ void gemm_accumulates_into_d(const float* A, const float* B, float* D, int M, int N, int K) {
    int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) return;
    const int splits = 4;
    int chunk = (K + splits - 1) / splits;
    for (int z = 0; z < splits; ++z) {
        float acc = 0.0f;
        for (int k = z * chunk; k < min(K, (z + 1) * chunk); ++k)
            acc = fmaf(A[(long long)row * K + k], B[(long long)k * N + col], acc);
        D[(long long)row * N + col] += acc;
    }
}
