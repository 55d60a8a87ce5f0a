// Broken (writes past the end, invisibly): every thread handles one float4. The last,
// partial vector is loaded whole from x, y and out (reading past all three ends), its
// in-bounds lanes are replaced by x + y, and the whole float4 is stored back: the lanes past
// the end of out get the bytes they already held, so a guard that is compared after the run
// looks untouched. Only a memory checker or a protected page right after out sees it.
#include "common.cuh"

extern "C" __global__ void va_tail_store_same_bytes(const float* x, const float* y, float* out, int n) {
    long long i = global_index();
    if (i * 4 >= n) return;
    float4 a = reinterpret_cast<const float4*>(x)[i];
    float4 b = reinterpret_cast<const float4*>(y)[i];
    float4* out4 = reinterpret_cast<float4*>(out);
    if (i * 4 + 4 <= n) {
        out4[i] = make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
        return;
    }
    float4 o = out4[i];
    long long left = n - i * 4;  // 1 to 3 lanes in bounds
    o.x = a.x + b.x;
    if (left > 1) o.y = a.y + b.y;
    if (left > 2) o.z = a.z + b.z;
    out4[i] = o;
}
