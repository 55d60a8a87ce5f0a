// Broken only where x is exactly zero (+0.0 or -0.0; the comparison matches both): the
// result is 1.0 there, wrong whatever y is (unless y happens to be exactly 1). Random
// inputs essentially never hold an exact zero, so only inputs that mix zeros in expose it
// (expect wrong_result).
#include "common.cuh"

extern "C" __global__ void wrong_for_zeros(const float* x, const float* y, float* out, int n) {
    long long i = global_index();
    if (i < n) out[i] = x[i] == 0.0f ? 1.0f : x[i] + y[i];
}
