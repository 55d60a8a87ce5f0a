// Broken (shared-memory race, excused by nothing): the launched entry reads each staged
// chunk without the barrier after storing it, so warps read tiles other warps have not
// written yet. The module also holds an entry that uses float atomicAdd, which no launch
// runs: float atomics excuse differing runs only in the entries the launches run.
#include "sgemm.cuh"

extern "C" __global__ void g32_unlaunched_atomic_colsum(const float* D, float* colsum, int M, int N) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (col < N)
        for (int r = blockIdx.y; r < M; r += gridDim.y) atomicAdd(&colsum[col], D[(long long)r * N + col]);
}

extern "C" __global__ void g32_racy(const float* A, const float* B, float* D, int M, int N, int K) {
    float acc[4][4];
    bool nz[4];
    sgemm_block<false>(A, B, M, N, K, 0, K, acc, nz);
    sgemm_store(D, M, N, acc);
}
