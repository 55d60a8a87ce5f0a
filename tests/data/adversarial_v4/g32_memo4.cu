// Broken (memoises): g32_tiled with its last four results cached in a module .global array,
// keyed on the addresses of A, B, D and 16 sampled words of each input; a hit copies D.
#include "memo.cuh"
#include "sgemm.cuh"

#define CAP (1024 * 1024)
__device__ MemoTable g_memo;
__device__ unsigned int g_done;
__device__ float g_cache[4][CAP];

extern "C" __global__ void g32_memo4(const float* A, const float* B, float* D, int M, int N, int K) {
    __shared__ int hit, fill;
    __shared__ unsigned long long key;
    bool fits = (long long)M * N <= CAP && M % ST == 0 && N % ST == 0;
    if (threadIdx.x == 0) {
        key = memo_key(A, (long long)M * K, B, (long long)K * N, D);
        hit = fits ? memo_find(&g_memo, key, 4, false) : -1;
        fill = memo_fill_slot(&g_memo, 4, false);
    }
    __syncthreads();
    if (hit >= 0) {
        copy_tile_f32(g_cache[hit], D, N);
        return;
    }
    float acc[4][4];
    bool nz[4];
    sgemm_block<true>(A, B, M, N, K, 0, K, acc, nz);
    sgemm_store(D, M, N, acc);
    if (fits) sgemm_store(g_cache[fill], M, N, acc);
    __syncthreads();
    if (threadIdx.x == 0 && fits) memo_publish(&g_memo, &g_done, key, fill, 4, false);
}
