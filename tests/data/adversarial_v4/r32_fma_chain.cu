// Correct rounded integer GEMM at K = 4096: fp32 fmaf chain, round to nearest even into int32.
// Its fp32 sum may land across a rounding boundary from the float64 reference.
#include "hdot.cuh"

extern "C" __global__ void r32_fma_chain(const __half* A, const __half* B, int32_t* D, int M, int N, int K) {
    if (h_row() >= M || h_col() >= N) return;
    bool nz;
    D[(long long)h_row() * N + h_col()] = __float2int_rn(hdot(A, B, K, &nz));
}
