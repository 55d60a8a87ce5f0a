// Broken: reads x 2^40 elements (4 TiB) past each index, far outside any allocation, so the
// load faults with an illegal address (expect crashed).
#include "common.cuh"

extern "C" __global__ void reads_out_of_bounds(const float* x, const float* y, float* out, int n) {
    long long i = global_index();
    if (i < n) out[i] = x[i + (1LL << 40)] + y[i];
}
