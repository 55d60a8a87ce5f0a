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

  pack_3x_arguments<Kernel>(args, req, out);
}
#endif
