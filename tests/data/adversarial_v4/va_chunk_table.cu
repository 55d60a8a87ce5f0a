// Correct, with state kept across launches: each block computes its contiguous chunk of the
// vector on the module's first launch, keeps it in a module .global table, and reads it on
// later launches. The chunks depend only on n and the grid, which never change.
#include "v4common.cuh"

#define MAX_BLOCKS 4096
__device__ long long g_begin[MAX_BLOCKS], g_end[MAX_BLOCKS];
__device__ int g_ready[MAX_BLOCKS];

extern "C" __global__ void va_chunk_table(const float* x, const float* y, float* out, int n) {
    __shared__ long long begin, end;
    if (threadIdx.x == 0) {
        if (blockIdx.x < MAX_BLOCKS && g_ready[blockIdx.x]) {
            begin = g_begin[blockIdx.x];
            end = g_end[blockIdx.x];
        } else {
            long long chunk = ((long long)n + gridDim.x - 1) / gridDim.x;
            begin = min((long long)n, blockIdx.x * chunk);
            end = min((long long)n, begin + chunk);
            if (blockIdx.x < MAX_BLOCKS) {
                g_begin[blockIdx.x] = begin;
                g_end[blockIdx.x] = end;
                __threadfence();
                g_ready[blockIdx.x] = 1;
            }
        }
    }
    __syncthreads();
    for (long long i = begin + threadIdx.x; i < end; i += blockDim.x) out[i] = x[i] + y[i];
}
