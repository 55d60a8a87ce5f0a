// Broken by a data race (the verifier's reruns should see it as wrong and not
// reproducible; expect wrong_result). Each thread first publishes x - y (a provisional
// value) in its shared-memory slot, waits a pseudo-random number of cycles, overwrites the
// slot with x + y, then, with no __syncthreads(), stores the slot of the thread one warp
// ahead. Whether that warp has already replaced its provisional value depends on the two
// warps' delays, which come from the global timer and the SM's cycle counter, so about half
// of the elements are x - y and which ones changes from run to run. A shared-memory
// read-after-write hazard between warps without a barrier, as racecheck reports it.
#include "common.cuh"

#define THREADS_PER_BLOCK 256
#define MAX_DELAY_CYCLES 4096

__device__ __forceinline__ unsigned long long global_timer() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// A delay that differs between warps and between runs: both clocks feed an integer hash so
// neighbouring warps, which read the clocks at nearly the same moment, still get unrelated
// delays.
__device__ __forceinline__ unsigned pseudo_random_delay(unsigned warp) {
    unsigned h = (unsigned)global_timer() ^ (unsigned)clock64() ^ (warp * 0x9E3779B9u);
    h ^= h >> 16;
    h *= 0x7FEB352Du;
    h ^= h >> 15;
    h *= 0x846CA68Bu;
    h ^= h >> 16;
    return h % MAX_DELAY_CYCLES;
}

__device__ __forceinline__ void spin(unsigned cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) {
    }
}

// The launch must use THREADS_PER_BLOCK threads per block and cover n exactly.
extern "C" __global__ void racy(const float* x, const float* y, float* out, int n) {
    // volatile: every store and load reaches shared memory, so the compiler can neither drop
    // the provisional store nor reuse a value it already holds.
    __shared__ float slot_storage[THREADS_PER_BLOCK];
    volatile float* slot = slot_storage;
    unsigned t = threadIdx.x;
    long long base = (long long)blockIdx.x * THREADS_PER_BLOCK;
    long long i = base + t;
    if (i >= n) return;
    slot[t] = x[i] - y[i];
    spin(pseudo_random_delay(t / 32));
    slot[t] = x[i] + y[i];
    unsigned partner = (t + 32) % THREADS_PER_BLOCK;  // a slot another warp writes
    out[base + partner] = slot[partner];  // missing __syncthreads() before this read
}
