// Broken (memoises): keeps its last four results in a module .global array, keyed on the
// addresses of A, B, D and 16 sampled words of each input; a hit copies the cached D. Every
// hit is the right answer for inputs that agree with the key, so only the time is a lie.
#include "hgemm.cuh"
#include "memo.cuh"

#define CAP (1024 * 1024)
__device__ MemoTable g_memo;
__device__ unsigned int g_done;
__device__ __half g_cache[4][CAP];

extern "C" __global__ void h_memo4(const __half* A, const __half* B, __half* D, int M, int N, int K) {
    __shared__ float stage[HT * HT];
    __shared__ int hit, fill;
    __shared__ unsigned long long key;
    bool fits = (long long)M * N <= CAP;
    if (threadIdx.x == 0) {
        key = memo_key(A, (long long)M * K / 2, B, (long long)N * K / 2, D);
        hit = fits ? memo_find(&g_memo, key, 4, false) : -1;
        fill = memo_fill_slot(&g_memo, 4, false);
    }
    __syncthreads();
    if (hit >= 0) {
        copy_tile_f16(g_cache[hit], D, N);
        return;
    }
    hgemm_block_tile(A, B, K, stage);
    __half* cache = g_cache[fill];
    hgemm_epilogue(stage, [&](int r, int c, float v) {
        __half h = __float2half_rn(v);
        D[(long long)r * N + c] = h;
        if (fits) cache[(long long)r * N + c] = h;
    });
    __syncthreads();
    if (threadIdx.x == 0 && fits) memo_publish(&g_memo, &g_done, key, fill, 4, false);
}
