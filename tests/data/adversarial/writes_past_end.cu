// Broken by an out-of-bounds write: every element of out is right, but the kernel assumes
// out is padded to a multiple of 64 elements past n and fills that padding, so threads
// n..n+63 store past the end of out, into whatever the next allocation is (expect
// out_of_bounds_write, naming out). The launch has 256 threads more than n to reach them.
// The padding gets 1.0 rather than 0.0 so the write shows even in memory that happens to
// hold zeros.
#include "common.cuh"

#define ASSUMED_PADDING 64

extern "C" __global__ void writes_past_end(const float* x, const float* y, float* out, int n) {
    long long i = global_index();
    if (i < n) {
        out[i] = x[i] + y[i];
    } else if (i < (long long)n + ASSUMED_PADDING) {
        out[i] = 1.0f;
    }
}
