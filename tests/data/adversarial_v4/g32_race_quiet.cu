// Broken (a shared-memory race no rerun can show): the honest GEMM, then every thread peeks
// at the slot another warp writes, with no barrier between, and folds what it read in where
// it changes nothing (only a NaN meets a NaN, and NaN + 1 is NaN). Every run's output is
// right whatever the peek reads; only racecheck sees the hazard.
#include "sgemm.cuh"

extern "C" __global__ void g32_race_quiet(const float* A, const float* B, float* D, int M, int N, int K) {
    __shared__ float peek[256];
    float acc[4][4];
    bool nz[4];
    sgemm_block<true>(A, B, M, N, K, 0, K, acc, nz);
    peek[threadIdx.x] = acc[0][0];
    float other = peek[(threadIdx.x + 32) & 255];  // another warp's slot, written without a barrier
    if (other != other && acc[0][0] != acc[0][0]) acc[0][0] += 1.0f;
    sgemm_store(D, M, N, acc);
}
