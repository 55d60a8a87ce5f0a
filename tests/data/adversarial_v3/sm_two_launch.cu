// Correct in two launches: per-row max and sum of exp into a scratch buffer (stats[row] =
// {max, sum}), then an elementwise launch over the whole matrix.
#include "common.cuh"

extern "C" __global__ void sm_row_stats(const float* x, float* stats, int cols) {
    __shared__ float scratch[32];
    const float* row = x + (long long)blockIdx.x * cols;
    float m = -INFINITY;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, row[j]);
    m = block_max(m, scratch);
    float s = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) s += expf(row[j] - m);
    s = block_sum(s, scratch);
    if (threadIdx.x == 0) {
        stats[2 * blockIdx.x] = m;
        stats[2 * blockIdx.x + 1] = s;
    }
}

extern "C" __global__ void sm_normalise(const float* x, const float* stats, float* out, int rows, int cols) {
    long long total = (long long)rows * cols;
    for (long long i = global_index(); i < total; i += grid_threads()) {
        long long r = i / cols;
        out[i] = expf(x[i] - stats[2 * r]) / stats[2 * r + 1];
    }
}
