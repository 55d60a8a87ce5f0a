// Correct: out = x + y in float4 loads and stores over the first n / 4 * 4 elements, then a
// scalar loop over the last n % 4 (buffers are 16-byte aligned, as cudaMalloc's are).
#include "common.cuh"

extern "C" __global__ void va_vec4_tail(const float* x, const float* y, float* out, int n) {
    long long vectors = n / 4;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    const float4* y4 = reinterpret_cast<const float4*>(y);
    float4* out4 = reinterpret_cast<float4*>(out);
    for (long long i = global_index(); i < vectors; i += grid_threads()) {
        float4 a = x4[i], b = y4[i];
        out4[i] = make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
    }
    for (long long i = vectors * 4 + global_index(); i < n; i += grid_threads()) out[i] = x[i] + y[i];
}
