// Warp 0 of each 64-thread block writes its own elements and warp 1's (x + y) to global
// memory; after __syncthreads() warp 1 copies its elements from the staging buffer into the
// output. Warp 1 first waits for a load and ~6000 cycles, so without the barrier it still
// reads after warp 0's stores unless warp 0 is made late (tests/test_race_delays*.py).
extern "C" __global__ void handoff(const float* x, const float* y, float* out, float* stage, int n) {
    int t = threadIdx.x, warp = t / 32, lane = t % 32;
    int base = blockIdx.x * 64;
    if (warp == 0) {
        int mine = base + lane, other = base + 32 + lane;
        if (other < n) stage[other] = x[other] + y[other];
        if (mine < n) out[mine] = x[mine] + y[mine];
    } else {
        float v = x[base + t < n ? base + t : 0];  // the same memory latency as warp 0's loads
        long long start = clock64();
        while (clock64() - start < 6000 + (v != v)) { }
    }
    __syncthreads();
    if (warp == 1 && base + t < n) out[base + t] = stage[base + t];
}
