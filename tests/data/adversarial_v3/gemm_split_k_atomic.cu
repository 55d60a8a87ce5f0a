// Correct but not bit-reproducible (split-K with float atomics): launch 1 zeroes D, launch 2
// adds gridDim.z partial products into it with atomicAdd, in whatever order the blocks run.
#include "common.cuh"

extern "C" __global__ void gemm_zero_d(float* D, int M, int N) {
    long long total = (long long)M * N;
    for (long long i = global_index(); i < total; i += grid_threads()) D[i] = 0.0f;
}

extern "C" __global__ void gemm_split_k_atomic(const float* A, const float* B, float* D, int M, int N, int K) {
    int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) return;
    int chunk = (K + gridDim.z - 1) / gridDim.z;
    int k_begin = blockIdx.z * chunk, k_end = min(K, k_begin + chunk);
    float acc = 0.0f;
    for (int k = k_begin; k < k_end; ++k) acc = fmaf(A[(long long)row * K + k], B[(long long)k * N + col], acc);
    atomicAdd(&D[(long long)row * N + col], acc);
}
