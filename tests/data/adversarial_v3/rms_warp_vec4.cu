// Correct: one warp per row with float4 loads (cols a multiple of 128, rows 16-byte aligned),
// the sum of squares reduced by shuffles alone.
#include "common.cuh"

extern "C" __global__ void rms_warp_vec4(const float* x, const float* w, float* y, int rows, int cols, float eps) {
    long long r = (long long)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x & 31;
    if (r >= rows) return;
    const float4* row = reinterpret_cast<const float4*>(x + r * cols);
    const float4* w4 = reinterpret_cast<const float4*>(w);
    float4* dst = reinterpret_cast<float4*>(y + r * cols);
    int vectors = cols / 4;
    float s = 0.0f;
    for (int j = lane; j < vectors; j += 32) {
        float4 v = row[j];
        s = fmaf(v.x, v.x, fmaf(v.y, v.y, fmaf(v.z, v.z, fmaf(v.w, v.w, s))));
    }
    float inv = rsqrtf(warp_sum(s) / cols + eps);
    for (int j = lane; j < vectors; j += 32) {
        float4 v = row[j], g = w4[j];
        dst[j] = make_float4(v.x * inv * g.x, v.y * inv * g.y, v.z * inv * g.z, v.w * inv * g.w);
    }
}
