// Shared by the adversarial kernels: every kernel computes out = x + y over n floats
// (the registry's vector_add) and takes (x, y, out, n) so one launch spec fits all.
#pragma once

__device__ __forceinline__ long long global_index() {
    return (long long)blockIdx.x * blockDim.x + threadIdx.x;
}
