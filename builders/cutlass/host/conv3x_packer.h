// Params packer for CUTLASS 3.x SM90 implicit-GEMM convolutions (ConvUniversal with a TMA
// warp-specialized mainloop): the profiler library's conv_operation_3x.hpp Arguments
// (ConvProblemShape of packed channels-last tensors, mainloop ptr_A / ptr_B, epilogue
// alpha / beta, ptr_C / ptr_D and their strides) -> to_underlying_arguments -> Params.
// Included after conv_packer.h (same request line and JSON result); needs CUTLASS_PACK_3X,
// so that the TMA descriptors are recorded (tensormap_recorder.h) rather than encoded.
#pragma once

#include "cutlass/conv/device/conv_universal_adapter.hpp"
#include "cutlass/conv/convnd_problem_shape.hpp"
#include "cutlass/util/packed_stride.hpp"

// ConvProblemShape from a request: activation (N, [D,] H, W, C) and filter (K, [T,] R, S, C),
// packed, with per-dimension padding, traversal stride and dilation (outermost first).
template <typename ProblemShape>
ProblemShape conv3x_problem(ConvRequest const &q) {
  using Extent = typename ProblemShape::TensorExtent;
  constexpr int kSpatial = ProblemShape::RankS;
  static_assert(kSpatial == 2 || kSpatial == 3, "2-D and 3-D convolutions only");
  Extent act{}, flt{};
  typename ProblemShape::ShapePadding pad{};
  typename ProblemShape::TraversalStride stride{};
  typename ProblemShape::ShapeDilation dil{};
  if constexpr (kSpatial == 2) {
    act = Extent{q.n, q.h, q.w, q.c};
    flt = Extent{q.k, q.r, q.s, q.c / q.groups};
  } else {
    act = Extent{q.n, q.d, q.h, q.w, q.c};
    flt = Extent{q.k, q.t, q.r, q.s, q.c / q.groups};
  }
  for (int i = 0; i < kSpatial; ++i) {
    int from = 3 - kSpatial + i;  // requests carry d, h, w; a 2-D conv uses h, w
    pad[i] = q.pad[from];
    stride[i] = q.stride[from];
    dil[i] = q.dil[from];
  }
  return ProblemShape(cutlass::conv::Mode::kCrossCorrelation, act, flt, pad, pad, stride, dil, q.groups);
}

template <typename Kernel>
typename Kernel::Arguments conv3x_arguments(ConvRequest const &req) {
  using Arguments = typename Kernel::Arguments;
  using ProblemShape = typename Kernel::ProblemShape;
  using StrideC = typename Kernel::StrideC;
  using StrideD = typename Kernel::StrideD;
  constexpr auto kOp = Kernel::DispatchPolicy::ConvOp;

  Arguments args{};
  args.problem_shape = conv3x_problem<ProblemShape>(req);
  ProblemShape const &shape = args.problem_shape;
  args.mainloop.ptr_A = static_cast<typename Kernel::ElementA const *>(req.a);
  args.mainloop.ptr_B = static_cast<typename Kernel::ElementB const *>(req.b);
  args.epilogue.thread.alpha = req.alpha;
  args.epilogue.thread.beta = req.beta;
  args.epilogue.ptr_C = static_cast<typename Kernel::ElementC const *>(req.cptr);
  args.epilogue.ptr_D = static_cast<typename Kernel::ElementD *>(req.dptr);
  // C's and D's strides as conv_operation_3x.hpp (and CUTLASS's 3.x conv testbed) set them.
  StrideC stride_c{};
  StrideD stride_d{};
  if constexpr (kOp == cutlass::conv::Operator::kWgrad) {
    stride_c = cutlass::make_cute_packed_stride(StrideC{}, shape.shape_C, shape.stride_C, kOp);
    stride_d = cutlass::make_cute_packed_stride(StrideD{}, shape.shape_C, shape.stride_C, kOp);
  } else {
    cute::for_each(cute::make_seq<cute::rank<0>(StrideC{})>{}, [&](auto i) {
      cute::get<0, i>(stride_c) = shape.stride_C[ProblemShape::RankT - 2 - i];
    });
    cute::for_each(cute::make_seq<cute::rank<0>(StrideD{})>{}, [&](auto i) {
      cute::get<0, i>(stride_d) = shape.stride_C[ProblemShape::RankT - 2 - i];
    });
  }
  args.epilogue.dC = stride_c;
  args.epilogue.dD = stride_d;
  return args;
}

// Params are copied by value through stack temporaries, so their padding can hold stale
// copies of descriptor markers from earlier encodes (where depends on how each process's
// stack is aligned for the 64-byte CUtensorMap). Only the four descriptors the kernel reads
// (mainloop A and B, epilogue C and D) are real: every other marker is erased, so that a
// stray copy is never taken for a descriptor.
template <typename Params>
void erase_stray_tensormap_markers(Params const &params) {
  const unsigned char *base = reinterpret_cast<const unsigned char *>(&params);
  const void *real[] = {params.mainloop.tma_load_a.get_tma_descriptor(),
                        params.mainloop.tma_load_b.get_tma_descriptor(),
                        params.epilogue.tma_load_c.get_tma_descriptor(),
                        params.epilogue.tma_store_d.get_tma_descriptor()};
  unsigned char *bytes = const_cast<unsigned char *>(base);
  for (size_t at = 0; at + sizeof(kTensorMapMagic) <= sizeof(Params); ++at) {
    if (std::memcmp(bytes + at, kTensorMapMagic, sizeof(kTensorMapMagic)) != 0) continue;
    bool is_real = false;
    for (const void *descriptor : real) is_real |= static_cast<const void *>(bytes + at) == descriptor;
    if (!is_real) std::memset(bytes + at, 0, sizeof(kTensorMapMagic));
  }
}

template <typename Kernel>
void pack_conv_3x(ConvRequest const &req, ConvResult &out) {
  using Device = cutlass::conv::device::ConvUniversalAdapter<Kernel>;
  using Params = typename Kernel::Params;
  using Cluster = typename Kernel::DispatchPolicy::ClusterShape;
  static_assert(sizeof(Params) <= sizeof(g_conv_params), "Params too large");

  out.not_applicable = nullptr;
  if (req.groups != 1) {  // conv_operation_3x.hpp: "CUTLASS 3 kernels currently only support groups = 1"
    out.not_applicable = "3.x convolutions take groups = 1 only";
    out.size = 0;
    return;
  }
  typename Kernel::Arguments args = conv3x_arguments<Kernel>(req);
  cutlass::Status status = Device::can_implement(args);
  if (status != cutlass::Status::kSuccess) {
    out.not_applicable = cutlassGetStatusString(status);
    out.size = 0;
    return;
  }
  reset_tensormap_records();
  std::memset(g_conv_params, 0, sizeof(g_conv_params));
  Params *params = new (g_conv_params) Params(Kernel::to_underlying_arguments(args, req.workspace));
  erase_stray_tensormap_markers(*params);
  dim3 grid = Kernel::get_grid_shape(*params);
  // The device adapter's grid from the same Params (its Arguments overload would encode
  // the descriptors again).
  dim3 check = Device::get_grid_shape(*params);
  dim3 block = Kernel::get_block_shape();
  out.bytes = g_conv_params;
  out.size = sizeof(Params);
  out.grid[0] = grid.x; out.grid[1] = grid.y; out.grid[2] = grid.z;
  out.block[0] = block.x; out.block[1] = block.y; out.block[2] = block.z;
  out.cluster[0] = cute::size<0>(Cluster{});
  out.cluster[1] = cute::size<1>(Cluster{});
  out.cluster[2] = cute::size<2>(Cluster{});
  out.smem = Kernel::SharedStorageSize;
  out.workspace_bytes = Device::get_workspace_size(args);
  out.check_grid[0] = check.x; out.check_grid[1] = check.y; out.check_grid[2] = check.z;
  out.check_block = Device::kThreadCount;
  out.check_smem = sizeof(typename Kernel::SharedStorage);
}
