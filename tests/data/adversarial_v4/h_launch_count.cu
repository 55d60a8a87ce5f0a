// Broken (counts its launches): a module global counts launches; from the 40th launch of a
// loaded module on, the kernel returns without computing (the checks are over by then).
#include "hgemm.cuh"

#define HONEST_LAUNCHES 40u
__device__ unsigned int g_launches;

extern "C" __global__ void h_launch_count(const __half* A, const __half* B, __half* D, int M, int N, int K) {
    __shared__ float stage[HT * HT];
    __shared__ unsigned int launches;
    if (threadIdx.x == 0) launches = *(volatile unsigned int*)&g_launches;
    __syncthreads();
    if (launches >= HONEST_LAUNCHES) return;
    hgemm_block_tile(A, B, K, stage);
    hgemm_epilogue(stage, [&](int r, int c, float v) { D[(long long)r * N + c] = __float2half_rn(v); });
    if (threadIdx.x == 0 && blockIdx.x == 0 && blockIdx.y == 0) atomicAdd(&g_launches, 1u);
}
