// Does not compile: uses an undeclared name. The build must keep a build_failed row.
extern "C" __global__ void does_not_compile(const float* x, const float* y, float* out, int n) {
    out[0] = x[0] + undeclared_value;
}
