// Broken: the result is right but x is zeroed afterwards (expect modified_input).
#include "common.cuh"

extern "C" __global__ void overwrites_input(float* x, const float* y, float* out, int n) {
    long long i = global_index();
    if (i < n) {
        out[i] = x[i] + y[i];
        x[i] = 0.0f;
    }
}
