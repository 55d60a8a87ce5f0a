// Host-only Params packer for CUTLASS implicit-GEMM convolutions (Conv2d / Conv3d fprop,
// dgrad, wgrad): builds the kernel's by-value Params from Arguments on a CPU and prints
// their bytes with the launch shape as one JSON line, or why the kernel cannot run the
// problem (the device adapter's own can_implement). 2.x kernels are packed here
// (pack_conv_2x); SM90 3.x kernels by conv3x_packer.h, whose im2col and tiled CUtensorMap
// descriptors come back as markers plus recorded encode arguments (tensormap_recorder.h).
//
// Request line: KERNEL ALPHA BETA N D H W C K T R S Z P Q PAD_D PAD_H PAD_W STRIDE_D STRIDE_H
// STRIDE_W DIL_D DIL_H DIL_W GROUPS PTR_A PTR_B PTR_C PTR_D PTR_WORKSPACE (pointers in hex;
// a 2-D conv gives D = T = Z = 1 and ignores the D entries).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

#include "cutlass/conv/conv2d_problem_size.h"
#include "cutlass/conv/conv3d_problem_size.h"
#include "cutlass/conv/device/implicit_gemm_convolution.h"

#ifdef CUTLASS_PACK_3X
#include "tensormap_recorder.h"
#endif

struct ConvRequest {
  double alpha, beta;
  int n, d, h, w, c, k, t, r, s, z, p, q;
  int pad[3], stride[3], dil[3];
  int groups;
  void *a, *b, *cptr, *dptr, *workspace;
};

struct ConvResult {
  const unsigned char *bytes;
  size_t size;
  unsigned grid[3], block[3], cluster[3];
  size_t smem, workspace_bytes;
  unsigned check_grid[3], check_block;
  size_t check_smem;
  const char *not_applicable;  // the can_implement status when the kernel cannot run it
};

typedef void (*ConvPackFn)(ConvRequest const &, ConvResult &);

struct ConvPackEntry {
  const char *name;
  ConvPackFn fn;
};

alignas(128) static unsigned char g_conv_params[1 << 16];

// 3.x Params are built by value through the stack (to_underlying_arguments): zero it first
// so their padding bytes are zero.
__attribute__((noinline)) static void conv_scrub_stack() {
  volatile unsigned char area[1 << 20];
  for (size_t i = 0; i < sizeof(area); ++i) area[i] = 0;
}

template <typename ProblemSize>
ProblemSize conv_problem(ConvRequest const &q);

template <>
cutlass::conv::Conv2dProblemSize conv_problem<cutlass::conv::Conv2dProblemSize>(ConvRequest const &q) {
  return cutlass::conv::Conv2dProblemSize(q.n, q.h, q.w, q.c, q.k, q.r, q.s, q.p, q.q, q.pad[1], q.pad[2],
                                          q.stride[1], q.stride[2], q.dil[1], q.dil[2],
                                          cutlass::conv::Mode::kCrossCorrelation, 1, q.groups);
}

template <>
cutlass::conv::Conv3dProblemSize conv_problem<cutlass::conv::Conv3dProblemSize>(ConvRequest const &q) {
  return cutlass::conv::Conv3dProblemSize(q.n, q.d, q.h, q.w, q.c, q.k, q.t, q.r, q.s, q.z, q.p, q.q,
                                          q.pad[0], q.pad[1], q.pad[2], q.stride[0], q.stride[1], q.stride[2],
                                          q.dil[0], q.dil[1], q.dil[2],
                                          cutlass::conv::Mode::kCrossCorrelation, 1, q.groups);
}

template <typename Kernel>
void pack_conv_2x(ConvRequest const &req, ConvResult &out) {
  using Device = cutlass::conv::device::ImplicitGemmConvolution<Kernel>;
  using Arguments = typename Kernel::Arguments;
  using Params = typename Kernel::Params;
  using ProblemSize = std::decay_t<decltype(std::declval<Arguments>().problem_size)>;
  using RefA = typename Kernel::TensorRefA;
  using RefB = typename Kernel::TensorRefB;
  using RefC = typename Kernel::TensorRefC;
  using ElementCompute = typename Kernel::EpilogueOutputOp::ElementCompute;
  static_assert(sizeof(Params) <= sizeof(g_conv_params), "Params too large");
  constexpr auto kOp = Kernel::kConvolutionalOperator;

  ProblemSize problem = conv_problem<ProblemSize>(req);
  RefA ref_a(static_cast<typename RefA::Element *>(req.a),
             RefA::Layout::packed(cutlass::conv::implicit_gemm_tensor_a_extent(kOp, problem)));
  RefB ref_b(static_cast<typename RefB::Element *>(req.b),
             RefB::Layout::packed(cutlass::conv::implicit_gemm_tensor_b_extent(kOp, problem)));
  RefC ref_c(static_cast<typename RefC::Element *>(req.cptr),
             RefC::Layout::packed(cutlass::conv::implicit_gemm_tensor_c_extent(kOp, problem)));
  RefC ref_d(static_cast<typename RefC::Element *>(req.dptr),
             RefC::Layout::packed(cutlass::conv::implicit_gemm_tensor_c_extent(kOp, problem)));
  Arguments args(problem, ref_a, ref_b, ref_c, ref_d,
                 {ElementCompute(req.alpha), ElementCompute(req.beta)},
                 cutlass::conv::SplitKMode::kSerial);

  out.not_applicable = nullptr;
  cutlass::Status status = Device::can_implement(args);
  if (status != cutlass::Status::kSuccess) {
    out.not_applicable = cutlassGetStatusString(status);
    out.size = 0;
    return;
  }
  std::memset(g_conv_params, 0, sizeof(g_conv_params));
  Params *params = new (g_conv_params) Params(args, static_cast<int *>(req.workspace));

  typename Kernel::ThreadblockSwizzle swizzle;
  dim3 grid = swizzle.get_grid_shape(params->grid_tiled_shape);
  out.bytes = g_conv_params;
  out.size = sizeof(Params);
  out.grid[0] = grid.x; out.grid[1] = grid.y; out.grid[2] = grid.z;
  out.block[0] = Kernel::kThreadCount; out.block[1] = 1; out.block[2] = 1;
  out.cluster[0] = out.cluster[1] = out.cluster[2] = 1;
  out.smem = sizeof(typename Kernel::SharedStorage);
  out.workspace_bytes = Device::get_workspace_size(args);

  // The device adapter's grid, from the problem rather than from Params.
  using Tile = typename Kernel::ThreadblockShape;
  dim3 check = swizzle.get_grid_shape(swizzle.get_tiled_shape(
      kOp, problem, {Tile::kM, Tile::kN, Tile::kK}, problem.split_k_slices));
  out.check_grid[0] = check.x; out.check_grid[1] = check.y; out.check_grid[2] = check.z;
  out.check_block = 32 * Device::kWarpCount;
  out.check_smem = sizeof(typename Device::UnderlyingKernel::SharedStorage);
}

static void print_conv_result(const char *name, ConvResult const &r) {
  if (r.not_applicable) {
    std::printf("{\"kernel\": \"%s\", \"not_applicable\": \"can_implement: %s\"}\n", name, r.not_applicable);
    return;
  }
  std::printf("{\"kernel\": \"%s\", \"params_hex\": \"", name);
  for (size_t i = 0; i < r.size; ++i) std::printf("%02x", r.bytes[i]);
  std::printf("\", \"grid\": [%u, %u, %u], \"block\": [%u, %u, %u], \"cluster\": [%u, %u, %u], "
              "\"dynamic_smem\": %zu, \"workspace_bytes\": %zu, "
              "\"check_grid\": [%u, %u, %u], \"check_block\": %u, \"check_smem\": %zu, \"tensormaps\": ",
              r.grid[0], r.grid[1], r.grid[2], r.block[0], r.block[1], r.block[2], r.cluster[0], r.cluster[1],
              r.cluster[2], r.smem, r.workspace_bytes, r.check_grid[0], r.check_grid[1], r.check_grid[2],
              r.check_block, r.check_smem);
#ifdef CUTLASS_PACK_3X
  print_tensormap_records();
#else
  std::printf("[]");
#endif
  std::printf("}\n");
}

static void *conv_pointer(const char *text) {
  return reinterpret_cast<void *>(std::strtoull(text, nullptr, 16));
}

static int conv_packer_main(ConvPackEntry const *entries, size_t count) {
  char line[4096];
  while (std::fgets(line, sizeof(line), stdin)) {
    char name[1024], pa[32], pb[32], pc[32], pd[32], pw[32];
    ConvRequest q;
    if (std::sscanf(line,
                    "%1023s %lf %lf %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d "
                    "%31s %31s %31s %31s %31s",
                    name, &q.alpha, &q.beta, &q.n, &q.d, &q.h, &q.w, &q.c, &q.k, &q.t, &q.r, &q.s, &q.z, &q.p,
                    &q.q, &q.pad[0], &q.pad[1], &q.pad[2], &q.stride[0], &q.stride[1], &q.stride[2],
                    &q.dil[0], &q.dil[1], &q.dil[2], &q.groups, pa, pb, pc, pd, pw) != 30) {
      std::printf("{\"error\": \"bad request line\"}\n");
      std::fflush(stdout);
      continue;
    }
    q.a = conv_pointer(pa); q.b = conv_pointer(pb); q.cptr = conv_pointer(pc);
    q.dptr = conv_pointer(pd); q.workspace = conv_pointer(pw);
    bool found = false;
    for (size_t i = 0; i < count; ++i) {
      if (std::strcmp(entries[i].name, name) == 0) {
        ConvResult result{};
        // Packed twice, the second kept, as host/packer.h does: a process's first 3.x pack
        // can leave stale stack bytes in TMA copy atoms' padding; the second is reproducible.
        for (int pass = 0; pass < 2; ++pass) {
          conv_scrub_stack();
          entries[i].fn(q, result);
        }
        print_conv_result(name, result);
        found = true;
        break;
      }
    }
    if (!found) std::printf("{\"kernel\": \"%s\", \"error\": \"unknown kernel\"}\n", name);
    std::fflush(stdout);
  }
  return 0;
}
