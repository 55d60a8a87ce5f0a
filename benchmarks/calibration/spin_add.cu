// Timing calibration: out = x + y, then thread 0 of every block spins on the global timer
// for spin_ns. One wave of blocks, so the kernel's own duration is spin_ns plus the time to
// start and retire the wave: a known quantity to compare timing methods against.
extern "C" __global__ void spin_add(const float* x, const float* y, float* out, int n,
                                    unsigned long long spin_ns) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] + y[i];
    if (threadIdx.x == 0) {
        unsigned long long start, now;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
        do {
            asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
        } while (now - start < spin_ns);
    }
}
