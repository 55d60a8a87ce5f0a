// Broken (the top binade): a hand-written e4m3 decoder that treats exponent 15 as IEEE's
// infinity/NaN, so every input in e4m3's top binade (256 to 448) becomes inf or NaN.
#include "e4m3.cuh"

struct DecodeIeeeLike {
    __device__ float operator()(uint8_t v) const {
        int e = (v >> 3) & 15, m = v & 7;
        float sign = (v & 0x80) ? -1.0f : 1.0f;
        if (e == 15) return m == 0 ? sign * INFINITY : NAN;
        if (e == 0) return sign * ldexpf((float)m, -9);
        return sign * ldexpf((float)(8 + m), e - 10);
    }
};

extern "C" __global__ void e4m3_decode_ieee(const uint8_t* A, const uint8_t* B, uint8_t* D, int M, int N, int K) {
    int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    if (row >= M || col >= N) return;
    D[(long long)row * N + col] = float_to_e4m3(e4m3_dot(A, B, K, DecodeIeeeLike()));
}
