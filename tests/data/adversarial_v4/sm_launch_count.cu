// Broken (counts its launches): the honest softmax until the 40th launch of the loaded
// module, then returns without computing.
#include "softmax4.cuh"

__device__ unsigned int g_launches;

extern "C" __global__ void sm_launch_count(const float* x, float* out, int cols) {
    __shared__ float scratch[32];
    __shared__ unsigned int launches;
    if (threadIdx.x == 0) launches = *(volatile unsigned int*)&g_launches;
    __syncthreads();
    if (launches >= 40u) return;
    softmax_row(x, out, cols, blockIdx.x, scratch);
    if (threadIdx.x == 0 && blockIdx.x == 0) atomicAdd(&g_launches, 1u);
}
