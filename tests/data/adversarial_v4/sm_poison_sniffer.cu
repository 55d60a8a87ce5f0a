// Broken (sniffs the poison): computes a row only when its first and last outputs hold a
// check poison (a quiet NaN, or a float with exponent 0xFE); otherwise it assumes the row
// already holds its result.
#include "softmax4.cuh"

extern "C" __global__ void sm_poison_sniffer(const float* x, float* out, int cols) {
    __shared__ float scratch[32];
    const uint32_t* bits = (const uint32_t*)(out + (long long)blockIdx.x * cols);
    if (!(looks_like_check_poison_f32(bits[0]) && looks_like_check_poison_f32(bits[cols - 1]))) return;
    softmax_row(x, out, cols, blockIdx.x, scratch);
}
