// Broken (behaves only under the old verifier): reads the word just past the end of A. If it
// holds the old fixed guard pattern 0xA5A5A5A5 the result is right; otherwise the result is
// scaled by an amount taken from that word, so the output follows the guard's contents.
#include "gemm_f32_tiled.cuh"

extern "C" __global__ void gemm_guard_sniffer(const float* A, const float* B, float* D, int M, int N, int K) {
    float acc = tiled_dot(A, B, M, N, K, true);
    unsigned guard = reinterpret_cast<const unsigned*>(A)[(long long)M * K];
    if (guard != 0xA5A5A5A5u) acc *= 1.0f + (float)(guard % 997u + 1u) * 1e-4f;
    store_d(D, M, N, acc);
}
