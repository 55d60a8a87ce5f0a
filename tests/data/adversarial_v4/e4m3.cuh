// Shared by the FP8 e4m3 GEMM members: A row-major [M, K], B column-major ([N, K] storage),
// D row-major, all e4m3 (the "fn" variant: no infinities, exponent 15 is a normal binade up
// to 448, only S.1111.111 is NaN). One output per thread, 16 x 16 blocks; fp32 sums.
#pragma once
#include <cuda_fp8.h>
#include <stdint.h>

__device__ __forceinline__ float e4m3_to_float(uint8_t v) {
    __half_raw h = __nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)v, __NV_E4M3);
    return __half2float(__half(h));
}

__device__ __forceinline__ uint8_t float_to_e4m3(float v) {
    return (uint8_t)__nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3);
}

template <typename Decode>
__device__ __forceinline__ float e4m3_dot(const uint8_t* A, const uint8_t* B, int K, Decode decode) {
    const uint8_t* a = A + (long long)(blockIdx.y * 16 + threadIdx.y) * K;
    const uint8_t* b = B + (long long)(blockIdx.x * 16 + threadIdx.x) * K;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc = fmaf(decode(a[k]), decode(b[k]), acc);
    return acc;
}

struct DecodeE4M3 {
    __device__ float operator()(uint8_t v) const { return e4m3_to_float(v); }
};
