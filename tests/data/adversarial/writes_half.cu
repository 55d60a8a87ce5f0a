// Broken: stores only the first half of out (expect unwritten_output).
#include "common.cuh"

extern "C" __global__ void writes_half(const float* x, const float* y, float* out, int n) {
    long long i = global_index();
    if (i < n / 2) out[i] = x[i] + y[i];
}
