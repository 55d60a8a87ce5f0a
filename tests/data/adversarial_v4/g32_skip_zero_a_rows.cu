// Broken (skips stores): leaves D's row unwritten wherever A's row is all zero, as if D had
// been zeroed beforehand. (Its value there would be 0, or NaN against an inf or NaN in B.)
#include "sgemm.cuh"

extern "C" __global__ void g32_skip_zero_a_rows(const float* A, const float* B, float* D, int M, int N, int K) {
    float acc[4][4];
    bool nz[4];
    sgemm_block<true>(A, B, M, N, K, 0, K, acc, nz);
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j)
            if (nz[i] && s_row(i) < M && s_col(j) < N) D[(long long)s_row(i) * N + s_col(j)] = acc[i][j];
}
