// Broken (shared-memory race, excused by nothing): the block's sum is read back from shared
// memory before the barrier that publishes it, so some warps read a stale or partial total.
// The module also holds an entry with float atomicAdd that no launch runs.
#include "softmax4.cuh"

extern "C" __global__ void sm_unlaunched_atomic_total(const float* x, float* total, int n) {
    for (long long i = global_index(); i < n; i += grid_threads()) atomicAdd(total, x[i]);
}

extern "C" __global__ void sm_racy(const float* x, float* out, int cols) {
    __shared__ float scratch[32];
    __shared__ float total;
    const float* row = x + (long long)blockIdx.x * cols;
    float* dst = out + (long long)blockIdx.x * cols;
    float m = row_max(row, 0, cols, scratch);
    float s = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) s += expf(row[j] - m);
    s = warp_sum(s);
    if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = s;
    if (threadIdx.x == 0) {  // sums the warps' partials without waiting for them
        float t = 0.0f;
        for (int w = 0; w < (int)(blockDim.x >> 5); ++w) t += scratch[w];
        total = t;
    }
    __syncthreads();
    for (int j = threadIdx.x; j < cols; j += blockDim.x) dst[j] = expf(row[j] - m) / total;
}
