// Broken (a shared-memory race): the classic tree reduction over 256 partial sums with the
// __syncthreads() between its steps left out. Threads of one warp read partials that other
// warps have not yet added in; which ones depends on how the warps are scheduled.
#include "common.cuh"

#define THREADS 256

extern "C" __global__ void rms_race_tree(const float* x, const float* w, float* y, int cols, float eps) {
    __shared__ float partial[THREADS];
    const float* row = x + (long long)blockIdx.x * cols;
    float* dst = y + (long long)blockIdx.x * cols;
    float s = 0.0f;
    for (int j = threadIdx.x; j < cols; j += THREADS) s = fmaf(row[j], row[j], s);
    partial[threadIdx.x] = s;
    __syncthreads();
    for (int stride = THREADS / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
        // missing __syncthreads()
    }
    __syncthreads();
    float inv = rsqrtf(partial[0] / cols + eps);
    for (int j = threadIdx.x; j < cols; j += THREADS) dst[j] = row[j] * inv * w[j];
}
