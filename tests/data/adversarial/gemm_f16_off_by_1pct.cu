// Broken by 1%: the correct tiled fp16 GEMM, with every result scaled by 1.01 before the
// store. The error is 10 to 20 fp16 ulps, far above what an fp32-accumulating kernel may be
// off by, yet small enough to look right at a glance (expect wrong_result).
#include "gemm_f16_tiled.cuh"

extern "C" __global__ void gemm_f16_off_by_1pct(const __half* A, const __half* B, __half* D, int M, int N, int K) {
    gemm_f16_tiled_f32_accumulate(A, B, D, M, N, K, 1.01f);
}
