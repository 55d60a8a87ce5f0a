// Correct but not bit-reproducible: each warp adds its partial sum of squares into one
// shared float with atomicAdd, in whatever order the warps arrive. Float atomics in the
// launched entry excuse runs that differ in the last bits.
#include "norm4.cuh"

extern "C" __global__ void rms_smem_atomic_sum(const float* x, const float* w, float* y, int cols, float eps) {
    __shared__ float total;
    const float* row = x + (long long)blockIdx.x * cols;
    if (threadIdx.x == 0) total = 0.0f;
    __syncthreads();
    float ss = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) ss += row[j] * row[j];
    ss = warp_sum(ss);
    if ((threadIdx.x & 31) == 0) atomicAdd(&total, ss);
    __syncthreads();
    float r = rsqrtf(total / cols + eps);
    for (int j = threadIdx.x; j < cols; j += blockDim.x) y[(long long)blockIdx.x * cols + j] = row[j] * r * w[j];
}
