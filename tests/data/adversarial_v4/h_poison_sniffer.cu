// Broken (sniffs the poison): computes a 64x64 tile only when the first and last elements of
// its D tile hold one of the check poisons (a quiet NaN, or the 0x78xx large finite value);
// anything else is taken as "still holds my result" and left alone.
#include "hgemm.cuh"
#include "v4common.cuh"

extern "C" __global__ void h_poison_sniffer(const __half* A, const __half* B, __half* D, int M, int N, int K) {
    __shared__ float stage[HT * HT];
    __shared__ bool fresh;
    if (threadIdx.x == 0) {
        const uint16_t* bits = (const uint16_t*)D;
        long long first = (long long)blockIdx.y * HT * N + blockIdx.x * HT;
        long long last = first + (long long)(HT - 1) * N + HT - 1;
        fresh = looks_like_check_poison_f16(bits[first]) && looks_like_check_poison_f16(bits[last]);
    }
    __syncthreads();
    if (!fresh) return;
    hgemm_block_tile(A, B, K, stage);
    hgemm_epilogue(stage, [&](int r, int c, float v) { D[(long long)r * N + c] = __float2half_rn(v); });
}
