// Broken: writes every element, all of them zero (expect wrong_result).
#include "common.cuh"

extern "C" __global__ void writes_zeros(const float* x, const float* y, float* out, int n) {
    long long i = global_index();
    if (i < n) out[i] = 0.0f;
}
