// Shared by the RMSNorm and LayerNorm members: x and y are rows x cols fp32, row-major, w (and
// b) cols fp32, one block per row. The honest row statistics, and the overflow pre-scaling
// loop the hanging members use (a no-op on every finite row of the op's domain, whose
// magnitudes stay below 2^60; an infinity never scales down).
#pragma once
#include "v4common.cuh"

__device__ __forceinline__ float rms_rstd(const float* row, int cols, float eps, float* scratch) {
    float ss = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) ss += row[j] * row[j];
    ss = block_sum(ss, scratch);
    return rsqrtf(ss / cols + eps);
}

// The power of two every element is scaled by so that squares cannot overflow: 1 for the
// domain's rows. Loops forever on a row holding +-inf.
__device__ __forceinline__ float prescale(const float* row, int cols, float* scratch) {
    float amax = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) amax = fmaxf(amax, fabsf(row[j]));
    amax = block_max(amax, scratch);
    float scale = 1.0f;
    while (amax > 0x1p60f) {
        asm volatile("");
        amax *= 0x1p-60f;
        scale *= 0x1p-60f;
    }
    return scale;
}
