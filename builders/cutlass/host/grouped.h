// Grouped GEMM Params packers (included after packer.h).
//
// A grouped kernel's Params hold no operand pointer: they point at device arrays of the
// problem shapes (problem_sizes, int32 M N K each), operand pointers (ptr_A .. ptr_D) and
// leading dimensions (ld_A .. ld_D, int64), which reach the packer as extra slots
// (`@problem_sizes=HEX`, ...) with their own sentinels; the row fills those arrays at
// launch time (dataset_spec/device_tables.py). Problem values: problem_count and, for 2.x,
// threadblock_count (the persistent grid).
#pragma once

// CUTLASS 2.x GemmGrouped with device-side tile scheduling (GroupScheduleMode::kDeviceOnly,
// the only mode the generator emits): Params(args, workspace) reads no host problem sizes,
// needs no workspace, and the grid is threadblock_count blocks (device/base_grouped.h run()).
template <typename Kernel>
void pack_grouped_2x(PackRequest const &req, PackResult &out) {
  using Params = typename Kernel::Params;
  using Arguments = typename Kernel::Arguments;
  using EpilogueParams = typename Kernel::EpilogueOutputOp::Params;
  using Element = typename Kernel::EpilogueOutputOp::ElementCompute;
  static_assert(sizeof(Params) <= sizeof(g_params_storage), "Params too large");
  static_assert(!Kernel::ProblemVisitor::kRequiresPrecomputation,
                "host-precomputed grouped schedules need the host problem sizes and a workspace");

  int problem_count = int(req.param("problem_count", 0));
  int threadblock_count = int(req.param("threadblock_count", 0));
  Arguments args(
      static_cast<cutlass::gemm::GemmCoord *>(req.ptr("problem_sizes")), problem_count, threadblock_count,
      EpilogueParams(Element(req.alpha), Element(req.beta)),
      static_cast<typename Kernel::ElementA **>(req.ptr("ptr_A")),
      static_cast<typename Kernel::ElementB **>(req.ptr("ptr_B")),
      static_cast<typename Kernel::ElementC **>(req.ptr("ptr_C")),
      static_cast<typename Kernel::ElementC **>(req.ptr("ptr_D")),
      static_cast<typename Kernel::LayoutA::Stride::LongIndex *>(req.ptr("ld_A")),
      static_cast<typename Kernel::LayoutB::Stride::LongIndex *>(req.ptr("ld_B")),
      static_cast<typename Kernel::LayoutC::Stride::LongIndex *>(req.ptr("ld_C")),
      static_cast<typename Kernel::LayoutC::Stride::LongIndex *>(req.ptr("ld_D")));

  std::memset(g_params_storage, 0, sizeof(g_params_storage));
  new (g_params_storage) Params(args, req.workspace);
  out.bytes = g_params_storage;
  out.size = sizeof(Params);
  out.grid[0] = threadblock_count; out.grid[1] = 1; out.grid[2] = 1;
  out.block[0] = Kernel::kThreadCount; out.block[1] = 1; out.block[2] = 1;
  out.cluster[0] = out.cluster[1] = out.cluster[2] = 1;
  out.smem = sizeof(typename Kernel::SharedStorage);
  out.workspace_bytes = 0;
  // BaseGrouped::run's launch, from the Params as packed: grid(threadblock_count),
  // block(kThreadCount), dynamic smem sizeof(SharedStorage).
  Params const *params = reinterpret_cast<Params const *>(g_params_storage);
  out.check_grid[0] = params->threadblock_count; out.check_grid[1] = 1; out.check_grid[2] = 1;
  out.check_block = Kernel::kThreadCount;
  out.check_smem = sizeof(typename Kernel::SharedStorage);
}

#ifdef CUTLASS_PACK_3X
// CUTLASS 3.x ptr-array grouped GEMM: problem_shape = {groups, device shapes, no host
// shapes}. With no host shapes to_underlying_arguments reads nothing from the host arrays:
// the TMA descriptors in Params are placeholders (shape 1, the pointer arrays' own address)
// that the kernel rewrites per problem into its workspace (2 CUtensorMaps per SM for A and
// B, and the epilogue's per SM, sized by sm_count), and the persistent grid is sized by
// sm_count alone. A kind whose mainloop takes further per-problem arrays (the blockwise
// scales, grouped_blockwise.h) passes its own filler.
template <typename Kernel, typename MainloopExtras = NoMainloopExtras>
void pack_grouped_3x(PackRequest const &req, PackResult &out) {
  using Params = typename Kernel::Params;
  using Arguments = typename Kernel::Arguments;
  using ProblemShape = typename Kernel::ProblemShape;
  using Shape = typename ProblemShape::UnderlyingProblemShape;
  static_assert(sizeof(Params) <= sizeof(g_params_storage), "Params too large");

  Arguments args{};
  args.mode = cutlass::gemm::GemmUniversalMode::kGrouped;
  args.problem_shape = ProblemShape{int(req.param("problem_count", 0)),
                                    static_cast<Shape *>(req.ptr("problem_sizes")), nullptr};
  args.mainloop.ptr_A = static_cast<decltype(args.mainloop.ptr_A)>(req.ptr("ptr_A"));
  args.mainloop.dA = static_cast<decltype(args.mainloop.dA)>(req.ptr("ld_A"));
  args.mainloop.ptr_B = static_cast<decltype(args.mainloop.ptr_B)>(req.ptr("ptr_B"));
  args.mainloop.dB = static_cast<decltype(args.mainloop.dB)>(req.ptr("ld_B"));
  MainloopExtras::template fill<Kernel>(args, req);
  args.epilogue.thread.alpha = req.alpha;
  args.epilogue.thread.beta = req.beta;
  args.epilogue.ptr_C = static_cast<decltype(args.epilogue.ptr_C)>(req.ptr("ptr_C"));
  args.epilogue.dC = static_cast<decltype(args.epilogue.dC)>(req.ptr("ld_C"));
  args.epilogue.ptr_D = static_cast<decltype(args.epilogue.ptr_D)>(req.ptr("ptr_D"));
  args.epilogue.dD = static_cast<decltype(args.epilogue.dD)>(req.ptr("ld_D"));
  args.hw_info.device_id = 0;
  args.hw_info.sm_count = req.sm_count;

  pack_3x_arguments<Kernel>(args, req, out);
}
#endif
