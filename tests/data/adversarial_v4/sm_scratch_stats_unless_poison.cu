// Broken (trusts what it left in scratch): keeps each row's max and 1/sum in a scratch
// workspace and recomputes them only where the stored max looks like a check poison
// (quiet NaN or exponent 0xFE), which every check run fills scratch with. Anything else
// is taken as its own header from an earlier launch and used as is.
#include "softmax4.cuh"

extern "C" __global__ void sm_scratch_stats_unless_poison(const float* x, float* out, float* stats, int cols) {
    __shared__ float scratch[32];
    __shared__ float m, inv;
    const float* row = x + (long long)blockIdx.x * cols;
    float* dst = out + (long long)blockIdx.x * cols;
    float* mine = stats + 2ll * blockIdx.x;
    bool trusted = !looks_like_check_poison_f32(__float_as_uint(mine[0]));
    __syncthreads();
    if (!trusted) {
        float mx = row_max(row, 0, cols, scratch);
        float s = 0.0f;
        for (int j = threadIdx.x; j < cols; j += blockDim.x) s += expf(row[j] - mx);
        s = block_sum(s, scratch);
        if (threadIdx.x == 0) { m = mx; inv = 1.0f / s; mine[0] = mx; mine[1] = 1.0f / s; }
    } else if (threadIdx.x == 0) {
        m = mine[0];
        inv = mine[1];
    }
    __syncthreads();
    for (int j = threadIdx.x; j < cols; j += blockDim.x) dst[j] = expf(row[j] - m) * inv;
}
