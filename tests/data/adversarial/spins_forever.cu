// Broken: waits for a flag nobody sets. The flag is volatile, so every iteration reloads it
// and nvcc cannot fold the loop away; module globals start zeroed (expect timeout).
#include "common.cuh"

__device__ volatile int never_set = 0;

extern "C" __global__ void spins_forever(const float* x, const float* y, float* out, int n) {
    while (never_set == 0) {
    }
    long long i = global_index();
    if (i < n) out[i] = x[i] + y[i];
}
