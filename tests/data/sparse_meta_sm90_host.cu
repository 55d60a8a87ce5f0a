// Host-only check program for dataset_spec/sparse_meta.py's SM90 layout: evaluates
// cutlass::Sm90GemmSparseConfig::fill_layoutE (the layout SM90 sparse kernels and
// StructuredSparseCompressor use) at every (m, k) of an M x K problem read from stdin
// ("BITS MIN_TILE_K M K") and prints the offsets, row by row.
#include <cstdio>
#include "cutlass/cutlass.h"
#include "cutlass/numeric_types.h"
#include "cute/tensor.hpp"
#include "cute/arch/mma_sm90_desc.hpp"
#include "cutlass/gemm/collective/builders/sm90_sparse_config.inl"

template <class ElementA, int ESparsity, int MinTileK>
int run(int m, int k) {
  using Config = cutlass::Sm90GemmSparseConfig<cute::sparse_elem<2, ElementA>, cute::GMMA::Major::K,
                                               cute::sparse_elem<ESparsity, uint8_t>, cute::Int<MinTileK>>;
  auto layout_e = Config::fill_layoutE(cute::make_shape(m, 1, k, 1));
  for (int r = 0; r < m; ++r)
    for (int c = 0; c < k; ++c) std::printf("%lld ", (long long)layout_e(r, c, 0));
  std::printf("\n");
  return 0;
}

int main() {
  int bits, tile_k, m, k;
  if (std::scanf("%d %d %d %d", &bits, &tile_k, &m, &k) != 4) return 2;
  if (bits == 16 && tile_k == 64) return run<cutlass::half_t, 8, 64>(m, k);
  if (bits == 16 && tile_k == 128) return run<cutlass::half_t, 8, 128>(m, k);
  if (bits == 32 && tile_k == 32) return run<cutlass::tfloat32_t, 4, 32>(m, k);
  if (bits == 32 && tile_k == 64) return run<cutlass::tfloat32_t, 4, 64>(m, k);
  if (bits == 8 && tile_k == 128) return run<int8_t, 8, 128>(m, k);
  return 3;
}
