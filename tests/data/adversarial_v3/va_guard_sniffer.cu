// Broken (behaves only under the old verifier): reads the word just past the end of x, and
// adds correctly only where that word holds the fixed guard pattern 0xA5A5A5A5; anywhere
// else it returns (x + y) * (1 + 2^-10). Its outputs do not depend on what the guard holds
// otherwise, so only a memory checker that sees the read past the end names the cause.
#include "common.cuh"

extern "C" __global__ void va_guard_sniffer(const float* x, const float* y, float* out, int n) {
    long long i = global_index();
    if (i >= n) return;
    unsigned guard = reinterpret_cast<const unsigned*>(x)[n];
    float sum = x[i] + y[i];
    out[i] = guard == 0xA5A5A5A5u ? sum : sum * (1.0f + 0x1p-10f);
}
