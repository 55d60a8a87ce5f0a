// Broken by a little: y is scaled by 1 + 2^-10, a relative error near 1e-3, far above
// fp32 tolerance yet small enough to look right at a glance (expect wrong_result).
#include "common.cuh"

extern "C" __global__ void subtly_wrong(const float* x, const float* y, float* out, int n) {
    long long i = global_index();
    if (i < n) out[i] = x[i] + y[i] * 1.0009765625f;
}
