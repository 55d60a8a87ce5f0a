// Correct, with state kept across launches: on the module's first launch every block builds
// a table of each thread's first column and stride in a module .global array (the same
// values whichever block writes them), marks it ready, and later launches read it. The
// table depends only on the block size, so a fresh module and every later launch agree.
#include "softmax4.cuh"

__device__ int g_first_column[1024];
__device__ int g_stride;
__device__ volatile int g_ready;

extern "C" __global__ void sm_column_table(const float* x, float* out, int cols) {
    __shared__ float scratch[32];
    __shared__ int ready;
    if (threadIdx.x == 0) ready = g_ready;
    __syncthreads();
    int first, stride;
    if (ready) {
        first = g_first_column[threadIdx.x];
        stride = g_stride;
    } else {
        first = threadIdx.x;
        stride = blockDim.x;
        g_first_column[threadIdx.x] = first;
        if (threadIdx.x == 0) g_stride = stride;
        __threadfence();
        __syncthreads();
        if (threadIdx.x == 0) g_ready = 1;
    }
    const float* row = x + (long long)blockIdx.x * cols;
    float* dst = out + (long long)blockIdx.x * cols;
    float m = -INFINITY;
    for (int j = first; j < cols; j += stride) m = fmaxf(m, row[j]);
    m = block_max(m, scratch);
    float s = 0.0f;
    for (int j = first; j < cols; j += stride) s += expf(row[j] - m);
    s = block_sum(s, scratch);
    for (int j = first; j < cols; j += stride) dst[j] = expf(row[j] - m) / s;
}
