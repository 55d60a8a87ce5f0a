// Broken for negative x: returns |x| + y, so about half of the elements are wrong under
// any sign-symmetric input distribution (expect wrong_result).
#include "common.cuh"

extern "C" __global__ void wrong_for_negative(const float* x, const float* y, float* out, int n) {
    long long i = global_index();
    if (i < n) out[i] = x[i] < 0.0f ? -x[i] + y[i] : x[i] + y[i];
}
