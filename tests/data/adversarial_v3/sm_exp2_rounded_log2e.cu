// Broken (a bound case): exp(v) as exp2f(v * 1.4427f). 1.4427 is log2(e) = 1.44269504...
// rounded to 5 digits, 3.4e-6 too large, so exp(v) comes out as exp(v (1 + 3.4e-6)): a
// relative error of 3.4e-6 |x - max|, about 57 |x - max| ulp, far beyond what exp's own
// argument rounding (one ulp of |x - max|) explains.
#include "softmax_rows.cuh"

struct Exp2Rounded {
    __device__ float operator()(float v) const { return exp2f(v * 1.4427f); }
};

extern "C" __global__ void sm_exp2_rounded_log2e(const float* x, float* out, int cols) {
    softmax_row_three_pass(x, out, cols, Exp2Rounded());
}
