// Shared by the K = 1 GEMM members: D = alpha * A @ B + beta * C with A [M, 1], B [1, N] and
// C, D stored column-major (layout_c col: element (m, n) at n * M + m); alpha and beta come
// as f32 kernel arguments. One thread per element of D, consecutive threads down a column.
#pragma once
#include "common.cuh"

#define FOR_EACH_ELEMENT_OF_D(M, N)                                              \
    for (long long i = global_index(); i < (long long)(M) * (N); i += grid_threads())
