// Host-only check program for dataset_spec/sparse_meta.py: runs CUTLASS's own
// cutlass::reorder_meta and cutlass::uncompress on the values and metadata words read from
// stdin ("BITS M K", M*K/2 kept values, M*K/2/kElementsPerElementE row-major words) and
// prints the dense M x K matrix and the reordered ColumnMajorInterleaved<2> E storage.
#include <cstdint>
#include <cstdio>
#include <vector>
#include "cutlass/cutlass.h"
#include "cutlass/numeric_types.h"
#include "cutlass/layout/matrix.h"
#include "cutlass/util/host_tensor.h"
#include "cutlass/util/host_reorder.h"
#include "cutlass/util/host_uncompress.h"

template <typename ElementA, typename ElementE>
int run(int m, int k) {
  int const per_e = 128 / cutlass::sizeof_bits<ElementA>::value;
  int const cols = k / 2 / per_e;
  cutlass::HostTensor<ElementA, cutlass::layout::RowMajor> a({m, k / 2}, false), dense({m, k}, false);
  cutlass::HostTensor<ElementE, cutlass::layout::RowMajor> e({m, cols}, false);
  cutlass::HostTensor<ElementE, cutlass::layout::ColumnMajorInterleaved<2>> reordered({m, cols}, false);
  for (int r = 0; r < m; ++r)
    for (int c = 0; c < k / 2; ++c) {
      long v; if (std::scanf("%ld", &v) != 1) return 2;
      a.at({r, c}) = ElementA(float(v));
    }
  for (int r = 0; r < m; ++r)
    for (int c = 0; c < cols; ++c) {
      unsigned long v; if (std::scanf("%lu", &v) != 1) return 2;
      e.at({r, c}) = ElementE(v);
    }
  cutlass::reorder_meta(reordered.host_ref(), e.host_ref(), {m, 0, cols});
  cutlass::uncompress(dense.host_ref(), a.host_ref(), e.host_ref(), m, k);
  for (int r = 0; r < m; ++r)
    for (int c = 0; c < k; ++c) std::printf("%ld ", long(float(dense.at({r, c}))));
  std::printf("\n");
  for (size_t i = 0; i < reordered.capacity(); ++i) std::printf("%lu ", (unsigned long)reordered.host_data()[i]);
  std::printf("\n");
  return 0;
}

int main() {
  int bits, m, k;
  if (std::scanf("%d %d %d", &bits, &m, &k) != 3) return 2;
  if (bits == 16) return run<cutlass::half_t, uint16_t>(m, k);
  if (bits == 32) return run<float, uint16_t>(m, k);
  if (bits == 8) return run<int8_t, uint32_t>(m, k);
  return 3;
}
