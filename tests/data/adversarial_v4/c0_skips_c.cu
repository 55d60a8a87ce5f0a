// Correct D = alpha * A @ B + beta * C for fp32: C is read only when beta != 0 (here it is
// 0, and C may hold NaN or inf, which the result must not see).
#include "sgemm.cuh"

extern "C" __global__ void c0_skips_c(const float* A, const float* B, const float* C, float* D, int M, int N, int K,
                                      float alpha, float beta) {
    float acc[4][4];
    bool nz[4];
    sgemm_block<true>(A, B, M, N, K, 0, K, acc, nz);
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j)
            if (s_row(i) < M && s_col(j) < N) {
                long long o = (long long)s_row(i) * N + s_col(j);
                D[o] = beta != 0.0f ? fmaf(beta, C[o], alpha * acc[i][j]) : alpha * acc[i][j];
            }
}
