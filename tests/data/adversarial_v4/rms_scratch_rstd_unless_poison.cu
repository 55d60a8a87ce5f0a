// Broken (trusts what it left in scratch): keeps each row's 1/rms in scratch and recomputes
// it only where the stored value looks like a check poison (quiet NaN or exponent 0xFE);
// any other value is taken as its own from an earlier launch.
#include "norm4.cuh"

extern "C" __global__ void rms_scratch_rstd_unless_poison(const float* x, const float* w, float* y, float* rstd,
                                                          int cols, float eps) {
    __shared__ float scratch[32];
    __shared__ float r;
    const float* row = x + (long long)blockIdx.x * cols;
    bool fresh = looks_like_check_poison_f32(__float_as_uint(rstd[blockIdx.x]));
    __syncthreads();
    if (fresh) {
        float v = rms_rstd(row, cols, eps, scratch);
        if (threadIdx.x == 0) { r = v; rstd[blockIdx.x] = v; }
    } else if (threadIdx.x == 0) {
        r = rstd[blockIdx.x];
    }
    __syncthreads();
    for (int j = threadIdx.x; j < cols; j += blockDim.x) y[(long long)blockIdx.x * cols + j] = row[j] * r * w[j];
}
