// Params packer for CUTLASS 3.x blockwise-scaled FP8 GEMMs (BlockwiseUniversal3x): the plain
// 3.x Arguments plus the mainloop's per-block scale tensors, ptr_SFA / layout_SFA and
// ptr_SFB / layout_SFB, from the request's SFA and SFB buffer slots. The layouts come from
// the kernel's own ScaleConfig (tile_atom_to_shape_SFA/SFB at the problem's M, N, K), so
// the row's scale buffers hold exactly the blocks, in the order, that the kernel reads.
#pragma once

#ifdef CUTLASS_PACK_3X
template <typename Kernel>
void pack_blockwise_3x(PackRequest const &req, PackResult &out) {
  using Params = typename Kernel::Params;
  using Arguments = typename Kernel::Arguments;
  using Mainloop = typename Kernel::CollectiveMainloop;
  using ScaleConfig = typename Mainloop::ScaleConfig;
  using ElementScale = typename Mainloop::ElementBlockScale;
  static_assert(sizeof(Params) <= sizeof(g_params_storage), "Params too large");

  auto problem = cute::make_shape(req.m, req.n, req.k, 1);
  Arguments args{};
  args.mode = cutlass::gemm::GemmUniversalMode::kGemm;
  args.problem_shape = {req.m, req.n, req.k, 1};
  args.mainloop.ptr_A = static_cast<typename Kernel::ElementA const *>(req.a);
  args.mainloop.dA = cutlass::make_cute_packed_stride(typename Kernel::StrideA{}, cute::make_shape(req.m, req.k, 1));
  args.mainloop.ptr_B = static_cast<typename Kernel::ElementB const *>(req.b);
  args.mainloop.dB = cutlass::make_cute_packed_stride(typename Kernel::StrideB{}, cute::make_shape(req.n, req.k, 1));
  args.mainloop.ptr_SFA = static_cast<ElementScale const *>(req.ptr("SFA"));
  args.mainloop.layout_SFA = ScaleConfig::tile_atom_to_shape_SFA(problem);
  args.mainloop.ptr_SFB = static_cast<ElementScale const *>(req.ptr("SFB"));
  args.mainloop.layout_SFB = ScaleConfig::tile_atom_to_shape_SFB(problem);
  args.epilogue.thread.alpha = req.alpha;
  args.epilogue.thread.beta = req.beta;
  args.epilogue.ptr_C = static_cast<typename Kernel::ElementC const *>(req.c);
  args.epilogue.dC = cutlass::make_cute_packed_stride(typename Kernel::StrideC{}, cute::make_shape(req.m, req.n, 1));
  args.epilogue.ptr_D = static_cast<typename Kernel::ElementD *>(req.d);
  args.epilogue.dD = cutlass::make_cute_packed_stride(typename Kernel::StrideD{}, cute::make_shape(req.m, req.n, 1));
  args.hw_info.device_id = 0;
  args.hw_info.sm_count = req.sm_count;

  std::memset(g_params_storage, 0, sizeof(g_params_storage));
  reset_tensormap_records();
  Params *params = new (g_params_storage) Params(Kernel::to_underlying_arguments(args, req.workspace));
  dim3 grid = Kernel::get_grid_shape(*params);
  dim3 block = Kernel::get_block_shape();
  using Cluster = typename Kernel::DispatchPolicy::ClusterShape;
  out.bytes = g_params_storage;
  out.size = sizeof(Params);
  out.grid[0] = grid.x; out.grid[1] = grid.y; out.grid[2] = grid.z;
  out.block[0] = block.x; out.block[1] = block.y; out.block[2] = block.z;
  out.cluster[0] = cute::size<0>(Cluster{});
  out.cluster[1] = cute::size<1>(Cluster{});
  out.cluster[2] = cute::size<2>(Cluster{});
  out.smem = Kernel::SharedStorageSize;
  out.workspace_bytes = Kernel::get_workspace_size(args);
  out.check_grid[0] = grid.x; out.check_grid[1] = grid.y; out.check_grid[2] = grid.z;
  out.check_block = Kernel::MaxThreadsPerBlock;
  out.check_smem = sizeof(typename Kernel::SharedStorage);
}
#endif
