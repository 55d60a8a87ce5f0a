// Right within tolerance but not reproducible: the lowest mantissa bit of each result is
// XORed with a bit of the global timer and the SM cycle counter, so two runs differ in a
// few bits (at most 1 ulp per element, far inside fp32 tolerance). Expect passed with
// deterministic=false.
#include "common.cuh"

__device__ __forceinline__ unsigned long long global_timer() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

extern "C" __global__ void timer_noise(const float* x, const float* y, float* out, int n) {
    long long i = global_index();
    if (i < n) {
        float sum = x[i] + y[i];
        unsigned noise = (unsigned)(global_timer() >> 5) ^ (unsigned)clock64();
        out[i] = __uint_as_float(__float_as_uint(sum) ^ (noise & 1u));
    }
}
