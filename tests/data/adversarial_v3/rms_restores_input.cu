// Broken (modifies an input, then restores it): the row is normalised in place in x, y is
// computed from the normalised x, and x gets its original values back before the kernel
// ends. A check of x after the run sees nothing; read-only inputs fault at the first store.
#include "common.cuh"

#define THREADS 256
#define PER_THREAD 3  // cols = 768

extern "C" __global__ void rms_restores_input(float* x, const float* w, float* y, int cols, float eps) {
    __shared__ float scratch[32];
    float* row = x + (long long)blockIdx.x * cols;
    float* dst = y + (long long)blockIdx.x * cols;
    float kept[PER_THREAD];
    float s = 0.0f;
    for (int k = 0; k < PER_THREAD; ++k) {
        kept[k] = row[threadIdx.x + k * THREADS];
        s = fmaf(kept[k], kept[k], s);
    }
    float inv = rsqrtf(block_sum(s, scratch) / cols + eps);
    for (int k = 0; k < PER_THREAD; ++k) row[threadIdx.x + k * THREADS] = kept[k] * inv;
    __syncthreads();
    for (int k = 0; k < PER_THREAD; ++k) {
        int j = threadIdx.x + k * THREADS;
        dst[j] = row[j] * w[j];
        row[j] = kept[k];
    }
}
