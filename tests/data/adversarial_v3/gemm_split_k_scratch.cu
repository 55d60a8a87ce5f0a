// Correct (split-K through scratch): launch 1 computes gridDim.z partial products, each over
// one contiguous K range, into part[z][M][N]; launch 2 adds the partials in z order.
#include "common.cuh"

extern "C" __global__ void gemm_split_k_partials(const float* A, const float* B, float* part, int M, int N, int K) {
    int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) return;
    int chunk = (K + gridDim.z - 1) / gridDim.z;
    int k_begin = blockIdx.z * chunk, k_end = min(K, k_begin + chunk);
    float acc = 0.0f;
    for (int k = k_begin; k < k_end; ++k) acc = fmaf(A[(long long)row * K + k], B[(long long)k * N + col], acc);
    part[((long long)blockIdx.z * M + row) * N + col] = acc;
}

extern "C" __global__ void gemm_split_k_reduce(const float* part, float* D, int M, int N, int splits) {
    long long total = (long long)M * N;
    for (long long i = global_index(); i < total; i += grid_threads()) {
        float acc = part[i];
        for (int z = 1; z < splits; ++z) acc += part[z * total + i];
        D[i] = acc;
    }
}
