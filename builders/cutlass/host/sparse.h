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

#ifdef CUTLASS_PACK_3X
// CUTLASS 3.x SparseUniversal3x (SM90): A and E are given with the layouts the kernel's
// SparseConfig fills for the problem (can_implement compares them), B, C, D as in pack_3x.
template <typename Kernel>
void pack_sparse_3x(PackRequest const &req, PackResult &out) {
  using Params = typename Kernel::Params;
  using Arguments = typename Kernel::Arguments;
  using Mainloop = typename Kernel::CollectiveMainloop;
  using SparseConfig = typename Mainloop::SparseConfig;
  static_assert(sizeof(Params) <= sizeof(g_params_storage), "Params too large");

  Arguments args{};
  args.mode = cutlass::gemm::GemmUniversalMode::kGemm;
  args.problem_shape = {req.m, req.n, req.k, 1};
  args.mainloop.ptr_A = static_cast<typename Mainloop::ElementA const *>(req.a);
  args.mainloop.layout_a = SparseConfig::fill_layoutA(args.problem_shape);
  args.mainloop.ptr_B = static_cast<typename Kernel::ElementB const *>(req.b);
  args.mainloop.dB = cutlass::make_cute_packed_stride(typename Kernel::StrideB{}, cute::make_shape(req.n, req.k, 1));
  args.mainloop.ptr_E = static_cast<typename Mainloop::ElementE const *>(req.ptr("E"));
  args.mainloop.layout_e = SparseConfig::fill_layoutE(args.problem_shape);
  args.epilogue.thread.alpha = req.alpha;
  args.epilogue.thread.beta = req.beta;
  args.epilogue.ptr_C = static_cast<typename Kernel::ElementC const *>(req.c);
  args.epilogue.dC = cutlass::make_cute_packed_stride(typename Kernel::StrideC{}, cute::make_shape(req.m, req.n, 1));
  args.epilogue.ptr_D = static_cast<typename Kernel::ElementD *>(req.d);
  args.epilogue.dD = cutlass::make_cute_packed_stride(typename Kernel::StrideD{}, cute::make_shape(req.m, req.n, 1));
  args.hw_info.device_id = 0;
  args.hw_info.sm_count = req.sm_count;
  if (req.ptr("E") != nullptr && !Kernel::can_implement(args)) {
    std::fprintf(stderr, "SparseUniversal3x::can_implement refuses M=%d N=%d K=%d\n", req.m, req.n, req.k);
    std::exit(3);
  }

  pack_3x_arguments<Kernel>(args, req, out);
}
#endif
