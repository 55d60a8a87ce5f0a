// Params packer for CUTLASS 2.x 2:4 sparse GEMMs (cutlass::gemm::kernel::SparseGemm, from
// device::SparseGemm): Params built from packed TensorRefs the way SparseGemm::initialize
// does, with A holding M x K/2 kept values and E the metadata (request slot @E) in its
// ColumnMajorInterleaved<2> layout of M x K/2/kElementsPerElementE words.
#pragma once

template <typename Kernel>
void pack_sparse_2x(PackRequest const &req, PackResult &out) {
  using Params = typename Kernel::Params;
  using EpilogueParams = typename Kernel::OutputOp::Params;
  using Element = typename Kernel::OutputOp::ElementCompute;
  using RefA = typename Kernel::TensorRefA;
  using RefB = typename Kernel::TensorRefB;
  using RefE = typename Kernel::TensorRefE;
  using RefC = typename Kernel::Epilogue::OutputTileIterator::TensorRef;
  using Tile = typename Kernel::Mma::Shape;
  static_assert(sizeof(Params) <= sizeof(g_params_storage), "Params too large");

  cutlass::gemm::GemmCoord problem(req.m, req.n, req.k);
  using Swizzle = typename Kernel::ThreadblockSwizzle;
  Swizzle swizzle;
  cutlass::gemm::GemmCoord tiled = swizzle.get_tiled_shape(problem, {Tile::kM, Tile::kN, Tile::kK}, 1);
  RefA ref_a(static_cast<typename RefA::Element *>(req.a),
             RefA::Layout::packed({req.m, req.k / Kernel::kSparse}));
  RefB ref_b(static_cast<typename RefB::Element *>(req.b), RefB::Layout::packed({req.k, req.n}));
  RefC ref_c(static_cast<typename RefC::Element *>(req.c), RefC::Layout::packed({req.m, req.n}));
  RefC ref_d(static_cast<typename RefC::Element *>(req.d), RefC::Layout::packed({req.m, req.n}));
  RefE ref_e(static_cast<typename RefE::Element *>(req.ptr("E")),
             RefE::Layout::packed({req.m, req.k / Kernel::kSparse / Kernel::kElementsPerElementE}));
  if (Kernel::can_implement(problem, ref_a, ref_b, ref_c, ref_d, ref_e) != cutlass::Status::kSuccess &&
      req.ptr("E") != nullptr) {
    std::fprintf(stderr, "SparseGemm::can_implement refuses M=%d N=%d K=%d\n", req.m, req.n, req.k);
    std::exit(3);
  }

  std::memset(g_params_storage, 0, sizeof(g_params_storage));
  Params *params = new (g_params_storage) Params(
      problem, tiled, ref_a, ref_b, ref_c, ref_d, ref_e,
      EpilogueParams(Element(req.alpha), Element(req.beta)), static_cast<int *>(req.workspace));

  dim3 grid = swizzle.get_grid_shape(params->grid_tiled_shape);
  out.bytes = g_params_storage;
  out.size = sizeof(Params);
  out.grid[0] = grid.x; out.grid[1] = grid.y; out.grid[2] = grid.z;
  out.block[0] = Kernel::kThreadCount; out.block[1] = 1; out.block[2] = 1;
  out.cluster[0] = out.cluster[1] = out.cluster[2] = 1;
  out.smem = sizeof(typename Kernel::SharedStorage);
  out.workspace_bytes = 0;  // split_k_slices = 1: no semaphore

  // device::SparseGemm::run's own launch shape, from the tiled problem rather than Params
  dim3 check = swizzle.get_grid_shape(tiled);
  out.check_grid[0] = check.x; out.check_grid[1] = check.y; out.check_grid[2] = check.z;
  out.check_block = 32 * Kernel::WarpCount::kCount;
  out.check_smem = int(sizeof(typename Kernel::SharedStorage));
}
