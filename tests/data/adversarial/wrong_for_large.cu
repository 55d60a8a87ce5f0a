// Broken only for large inputs: adds where |x| < 6 and subtracts elsewhere. Inputs drawn
// from normal(0, 1) or a uniform of the same spread (almost) never reach |x| >= 6, so only
// inputs spread over many binades expose it (expect wrong_result).
#include "common.cuh"

extern "C" __global__ void wrong_for_large(const float* x, const float* y, float* out, int n) {
    long long i = global_index();
    if (i < n) out[i] = fabsf(x[i]) < 6.0f ? x[i] + y[i] : x[i] - y[i];
}
