// Broken: computes the right answer, then thread 0 executes trap, which kills the
// context (expect crashed).
#include "common.cuh"

extern "C" __global__ void traps(const float* x, const float* y, float* out, int n) {
    long long i = global_index();
    if (i < n) out[i] = x[i] + y[i];
    if (i == 0) asm volatile("trap;");
}
