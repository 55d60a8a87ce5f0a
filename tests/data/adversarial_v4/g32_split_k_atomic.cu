// Correct but not bit-reproducible: launch 1 zeroes D, launch 2 adds gridDim.z split-K
// partial tiles into it with float atomicAdd, in whatever order the blocks run. Its timed
// outputs match the checked ones only approximately, as float atomics allow.
#include "v4common.cuh"
#include "sgemm.cuh"

extern "C" __global__ void g32_zero_d(float* D, int M, int N) {
    long long total = (long long)M * N;
    for (long long i = global_index(); i < total; i += grid_threads()) D[i] = 0.0f;
}

extern "C" __global__ void g32_split_k_atomic(const float* A, const float* B, float* D, int M, int N, int K) {
    int chunk = (K + gridDim.z - 1) / gridDim.z;
    chunk = (chunk + 15) / 16 * 16;
    int k_begin = min(K, (int)blockIdx.z * chunk), k_end = min(K, k_begin + chunk);
    float acc[4][4];
    bool nz[4];
    sgemm_block<true>(A, B, M, N, K, k_begin, k_end, acc, nz);
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j)
            if (s_row(i) < M && s_col(j) < N) atomicAdd(&D[(long long)s_row(i) * N + s_col(j)], acc[i][j]);
}
