// Broken (a shared-memory race): thread 0 finishes the row sum and publishes it in shared
// memory, but the other warps read it without a barrier, so they may divide by the sum a
// previous block left there (or by whatever the shared memory held). Which warps win
// changes between runs and with how many blocks share an SM.
#include "common.cuh"

extern "C" __global__ void sm_race_sum_broadcast(const float* x, float* out, int cols) {
    __shared__ float scratch[32];
    __shared__ float total;
    const float* row = x + (long long)blockIdx.x * cols;
    float* dst = out + (long long)blockIdx.x * cols;
    float m = -INFINITY;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, row[j]);
    m = block_max(m, scratch);
    float s = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) s += expf(row[j] - m);
    s = warp_sum(s);
    __syncthreads();
    if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        float t = 0.0f;
        for (int w = 0; w < (int)(blockDim.x >> 5); ++w) t += scratch[w];
        total = t;
    }
    // missing __syncthreads(): warps other than warp 0 race ahead of thread 0's store
    float sum = *(volatile float*)&total;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) dst[j] = expf(row[j] - m) / sum;
}
