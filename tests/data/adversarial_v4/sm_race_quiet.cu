// Broken (a shared-memory race no rerun can show): the honest softmax, except that every
// thread peeks at the row maximum another warp stores, with no barrier between, and folds
// what it read in where it changes nothing (only a NaN meets a NaN, and NaN + 1 is NaN).
// Every run's output is right whatever the peek reads; only racecheck sees the hazard.
#include "softmax4.cuh"

extern "C" __global__ void sm_race_quiet(const float* x, float* out, int cols) {
    __shared__ float scratch[32];
    __shared__ float peek[256];
    const float* row = x + (long long)blockIdx.x * cols;
    float m = row_max(row, 0, cols, scratch);
    peek[threadIdx.x] = m;
    float other = peek[(threadIdx.x + 32) & 255];  // another warp's slot, written without a barrier
    if (other != other && m != m) m += 1.0f;
    softmax_with_shift(row, out + (long long)blockIdx.x * cols, cols, m, scratch);
}
