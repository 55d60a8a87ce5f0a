// Broken (needs every block resident): two phases split by a software grid barrier. Phase 1
// writes each row's max and sum of exp to scratch (rows spread over the grid), phase 2
// normalises rows with another block-to-row mapping, reading statistics other blocks wrote.
// 264 blocks of 1024 threads (at most 32 registers each: __launch_bounds__) are exactly two
// per SM of a 132-SM H100, all resident only while nothing else holds an SM.
#include "softmax4.cuh"

extern "C" __global__ void __launch_bounds__(1024, 2)
sm_grid_barrier(const float* x, float* out, float* stats, int rows, int cols) {
    __shared__ float scratch[32];
    for (int r = blockIdx.x; r < rows; r += gridDim.x) {
        const float* row = x + (long long)r * cols;
        float m = row_max(row, 0, cols, scratch);
        float s = 0.0f;
        for (int j = threadIdx.x; j < cols; j += blockDim.x) s += expf(row[j] - m);
        s = block_sum(s, scratch);
        if (threadIdx.x == 0) { stats[2ll * r] = m; stats[2ll * r + 1] = s; }
    }
    software_grid_barrier();
    for (int r = gridDim.x - 1 - blockIdx.x; r < rows; r += gridDim.x) {
        const float* row = x + (long long)r * cols;
        float m = ((volatile float*)stats)[2ll * r], s = ((volatile float*)stats)[2ll * r + 1];
        for (int j = threadIdx.x; j < cols; j += blockDim.x) out[(long long)r * cols + j] = expf(row[j] - m) / s;
    }
}
