// Correct (a bound case): the epilogue as separate IEEE multiplies and one add, no fma:
// a * b, alpha * (a * b), beta * c, then the sum: four roundings, plus alpha and beta
// themselves rounded to f32 (1.3 and -0.7 are not representable). Every one of them is a
// roundoff of at most u relative to |alpha a b| or |beta c|.
#include "k1_gemm.cuh"

extern "C" __global__ void k1_ieee_mul_add(const float* A, const float* B, const float* C, float* D,
                                           int M, int N, float alpha, float beta) {
    FOR_EACH_ELEMENT_OF_D(M, N) {
        long long m = i % M, n = i / M;
        float product = __fmul_rn(A[m], B[n]);
        D[i] = __fadd_rn(__fmul_rn(alpha, product), __fmul_rn(beta, C[i]));
    }
}
