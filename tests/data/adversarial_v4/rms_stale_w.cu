// Broken (stale binding): binds the weight vector's address on the module's first launch
// (weights "never move") and reads through it ever after.
#include "norm4.cuh"

__device__ const float* g_w;

extern "C" __global__ void rms_stale_w(const float* x, const float* w, float* y, int cols, float eps) {
    __shared__ float scratch[32];
    __shared__ const float* bound;
    if (threadIdx.x == 0) {
        bound = *(const float* volatile*)&g_w;
        if (bound == nullptr) {
            bound = w;
            g_w = w;
        }
    }
    __syncthreads();
    const float* row = x + (long long)blockIdx.x * cols;
    float r = rms_rstd(row, cols, eps, scratch);
    for (int j = threadIdx.x; j < cols; j += blockDim.x) y[(long long)blockIdx.x * cols + j] = row[j] * r * bound[j];
}
