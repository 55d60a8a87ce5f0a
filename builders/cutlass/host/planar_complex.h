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

// CUTLASS 2.x planar complex array GEMMs (PlanarComplexArray: GemmPlanarComplexArray): one
// problem per batch index (GemmUniversalMode::kArray, as the library's operation runs it),
// its M, N, K read from the sizes_M/N/K tables and its planes from the ptr_<X>_real/imag
// tables; problem_size is the largest problem (it sizes the grid) and one leading dimension
// per plane serves every problem (problem values max_m/n/k, ld_A/B/C, problem_count).
template <typename Kernel>
void pack_planar_complex_array_2x(PackRequest const &req, PackResult &out) {
  using Arguments = typename Kernel::Arguments;
  using EpilogueParams = typename Kernel::EpilogueOutputOp::Params;
  using Element = typename Kernel::EpilogueOutputOp::ElementCompute;
  using Pointers = void const *const *;

  int batch = int(req.param("problem_count", 1));
  Arguments args{};
  args.mode = cutlass::gemm::GemmUniversalMode::kArray;
  args.problem_size = cutlass::gemm::GemmCoord(req.m, req.n, req.k);
  args.batch_count = batch;
  args.epilogue = EpilogueParams(Element(req.alpha), Element(req.beta));
  args.ptr_M = static_cast<int const *>(req.ptr("sizes_M"));
  args.ptr_N = static_cast<int const *>(req.ptr("sizes_N"));
  args.ptr_K = static_cast<int const *>(req.ptr("sizes_K"));
  args.ptr_A_real = static_cast<Pointers>(req.ptr("ptr_A_real"));
  args.ptr_A_imag = static_cast<Pointers>(req.ptr("ptr_A_imag"));
  args.ptr_B_real = static_cast<Pointers>(req.ptr("ptr_B_real"));
  args.ptr_B_imag = static_cast<Pointers>(req.ptr("ptr_B_imag"));
  args.ptr_C_real = static_cast<Pointers>(req.ptr("ptr_C_real"));
  args.ptr_C_imag = static_cast<Pointers>(req.ptr("ptr_C_imag"));
  args.ptr_D_real = static_cast<void *const *>(req.ptr("ptr_D_real"));
  args.ptr_D_imag = static_cast<void *const *>(req.ptr("ptr_D_imag"));
  args.lda_real = args.lda_imag = typename Kernel::LayoutA::Stride::Index(req.param("ld_A", 0));
  args.ldb_real = args.ldb_imag = typename Kernel::LayoutB::Stride::Index(req.param("ld_B", 0));
  args.ldc_real = args.ldc_imag = typename Kernel::LayoutC::Stride::Index(req.param("ld_C", 0));
  args.ldd_real = args.ldd_imag = args.ldc_real;
  pack_2x_arguments<Kernel>(args, req, out, batch);
}
