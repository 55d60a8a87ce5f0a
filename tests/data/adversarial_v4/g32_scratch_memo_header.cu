// Correct under a verifier that re-poisons scratch before every timed sample: g32_tiled that
// trusts a header it left in its scratch workspace (magic word, two keyed slots of cached
// D). Whenever the header is intact and the key (addresses + sampled words) matches, the
// cached D is the right answer; with scratch poisoned before every run and every timed
// sample the header is never intact, so it always computes. Without that re-poisoning it
// would hit on both alternating input sets and time as a copy.
#include "memo.cuh"
#include "sgemm.cuh"

#define HEADER_FLOATS 64
__device__ unsigned int g_done;

extern "C" __global__ void g32_scratch_memo_header(const float* A, const float* B, float* D, float* memo, int M,
                                                   int N, int K) {
    __shared__ int hit, fill;
    __shared__ unsigned long long key;
    MemoTable* table = (MemoTable*)memo;
    float* cache = memo + HEADER_FLOATS;
    if (threadIdx.x == 0) {
        key = memo_key(A, (long long)M * K, B, (long long)K * N, D);
        hit = memo_find(table, key, 2, true);
        fill = memo_fill_slot(table, 2, true);
    }
    __syncthreads();
    if (hit >= 0) {
        copy_tile_f32(cache + (long long)hit * M * N, D, N);
        return;
    }
    float acc[4][4];
    bool nz[4];
    sgemm_block<true>(A, B, M, N, K, 0, K, acc, nz);
    sgemm_store(D, M, N, acc);
    sgemm_store(cache + (long long)fill * M * N, M, N, acc);
    __syncthreads();
    if (threadIdx.x == 0) memo_publish(table, &g_done, key, fill, 2, true);
}
