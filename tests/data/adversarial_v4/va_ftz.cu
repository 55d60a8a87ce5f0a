// Broken (flushes subnormals): va_plain compiled with -ftz=true, so the add is add.ftz.f32:
// subnormal inputs count as zero and subnormal sums become zero.
#include "v4common.cuh"

extern "C" __global__ void va_ftz(const float* x, const float* y, float* out, int n) {
    for (long long i = global_index(); i < n; i += grid_threads()) out[i] = x[i] + y[i];
}
