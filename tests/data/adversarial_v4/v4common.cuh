// Shared by the v4 adversarial kernels: warp and block reductions (blockDim.x a multiple of
// 32, at most 1024 threads), the thread's global index, the recognisers of the verifier's
// check poisons (verify/inputs.py poison_words) that the poison-sniffing members use, and a
// software grid barrier (correct only while every block of the grid is resident).
#pragma once
#include <math.h>
#include <stdint.h>

__device__ __forceinline__ long long global_index() { return (long long)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ long long grid_threads() { return (long long)gridDim.x * blockDim.x; }

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
// scratch: 32 floats of shared memory; every thread gets the total; safe back to back.
__device__ __forceinline__ float block_sum(float v, float* scratch) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    v = warp_sum(v);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    return warp_sum(lane < warps ? scratch[lane] : 0.0f);
}
__device__ __forceinline__ float block_max(float v, float* scratch) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    v = warp_max(v);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    return warp_max(lane < warps ? scratch[lane] : -INFINITY);
}

// The check poisons of verify/inputs.py: poison 1 is a quiet NaN with a random payload,
// poison 2 a large finite value with the top exponent but one (f32: 0x7F000000 | bits,
// f16: 0x7800 | bits). A kernel that "recognises a fresh poison fill" tests these classes.
__device__ __forceinline__ bool looks_like_check_poison_f32(uint32_t w) {
    return (w & 0x7FC00000u) == 0x7FC00000u || (w & 0x7F800000u) == 0x7F000000u;
}
__device__ __forceinline__ bool looks_like_check_poison_f16(uint16_t w) {
    return (w & 0x7E00u) == 0x7E00u || (w & 0x7C00u) == 0x7800u;
}

// A sense-reversing software grid barrier over a module global: every block must be
// resident at once, which nothing guarantees without a cooperative launch.
__device__ unsigned int g_barrier_count;
__device__ volatile unsigned int g_barrier_generation;

__device__ __forceinline__ void software_grid_barrier() {
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned int generation = g_barrier_generation;
        __threadfence();
        unsigned int blocks = gridDim.x * gridDim.y * gridDim.z;
        if (atomicAdd(&g_barrier_count, 1u) == blocks - 1) {
            g_barrier_count = 0;
            __threadfence();
            g_barrier_generation = generation + 1;
        } else {
            while (g_barrier_generation == generation) { __nanosleep(64); }
        }
        __threadfence();
    }
    __syncthreads();
}
