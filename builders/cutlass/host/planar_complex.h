// Params packer for CUTLASS 2.x planar complex GEMMs (PlanarComplex: GemmPlanarComplex kernels),
// included after packer.h. Every complex operand is one buffer holding its real plane, then its
// imaginary plane (dataset_spec/ops/complex_gemm.py, params.complex.planar): the imaginary
// pointer is the buffer's address plus one plane, which the Python side finds as a pointer
// patch with that addend. Both planes share the operand's packed leading dimension. A null C
// (beta = 0) keeps both C pointers null.
#pragma once

template <typename Element>
static void *imaginary_plane(void const *real, long long rows, long long cols) {
  if (!real) return nullptr;
  return static_cast<char *>(const_cast<void *>(real)) + rows * cols * cutlass::sizeof_bits<Element>::value / 8;
}

template <typename Kernel>
void pack_planar_complex_2x(PackRequest const &req, PackResult &out) {
  using Arguments = typename Kernel::Arguments;
  using EpilogueParams = typename Kernel::EpilogueOutputOp::Params;
  using Element = typename Kernel::EpilogueOutputOp::ElementCompute;
  using ElementA = typename Kernel::ElementA;
  using ElementB = typename Kernel::ElementB;
  using ElementC = typename Kernel::ElementC;

  auto lda = packed_stride<typename Kernel::LayoutA>(req.m, req.k).at(0);
  auto ldb = packed_stride<typename Kernel::LayoutB>(req.k, req.n).at(0);
  auto ldc = packed_stride<typename Kernel::LayoutC>(req.m, req.n).at(0);
  cutlass::gemm::GemmCoord problem(req.m, req.n, req.k);
  Arguments args(
      cutlass::gemm::GemmUniversalMode::kGemm, problem, /*batch_count=*/1,
      EpilogueParams(Element(req.alpha), Element(req.beta)),
      req.a, imaginary_plane<ElementA>(req.a, req.m, req.k),
      req.b, imaginary_plane<ElementB>(req.b, req.k, req.n),
      req.c, imaginary_plane<ElementC>(req.c, req.m, req.n),
      req.d, imaginary_plane<ElementC>(req.d, req.m, req.n),
      lda, lda, ldb, ldb, ldc, ldc, ldc, ldc);
  pack_2x_arguments<Kernel>(args, req, out);
}
