// Host-only CUTLASS Params packer: builds a kernel's by-value Params from Arguments on a
// CPU (no device queries), and prints its bytes with the launch shape as one JSON line.
//
// Usage: packer KERNEL M N K ALPHA BETA SM_COUNT PTR_A PTR_B PTR_C PTR_D PTR_WORKSPACE
// [@SLOT=PTR ...] [NAME=VALUE ...] (pointers in hex): further buffers of a kernel kind
// (scales, metadata, problem arrays) and its further problem values. M, N, K and layouts are in the kernel's own terms. CUtensorMap
// descriptors (3.x TMA kernels) come back as markers plus their recorded encode arguments.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#ifdef CUTLASS_PACK_3X
#include "tensormap_recorder.h"
#endif

constexpr int kMaxExtras = 16;

struct PackRequest {
  int m, n, k;
  double alpha, beta;
  int sm_count;
  void *a, *b, *c, *d, *workspace;
  int extra_slots = 0, extra_params = 0;
  char slot_names[kMaxExtras][32];
  void *slot_pointers[kMaxExtras];
  char param_names[kMaxExtras][32];
  double param_values[kMaxExtras];

  // A further buffer's pointer (null when the request does not name it).
  void *ptr(const char *name) const {
    for (int i = 0; i < extra_slots; ++i)
      if (std::strcmp(slot_names[i], name) == 0) return slot_pointers[i];
    return nullptr;
  }
  // A further problem value, or `fallback` when the request does not give it.
  double param(const char *name, double fallback) const {
    for (int i = 0; i < extra_params; ++i)
      if (std::strcmp(param_names[i], name) == 0) return param_values[i];
    return fallback;
  }
};

struct PackResult {
  const unsigned char *bytes;
  size_t size;
  unsigned grid[3], block[3], cluster[3];
  size_t smem;
  size_t workspace_bytes;
  // Independent computations of the same launch shape (the device adapter's formulas).
  unsigned check_grid[3], check_block;
  size_t check_smem;
};

typedef void (*PackFn)(PackRequest const &, PackResult &);

struct PackEntry {
  const char *name;
  PackFn fn;
};

// Storage for Params, pre-filled with zeros so padding bytes are deterministic.
alignas(128) static unsigned char g_params_storage[1 << 16];

// Params built by value (3.x to_underlying_arguments) are copied through the stack, and
// their padding bytes carry whatever was there: zero the stack first so they are zero.
__attribute__((noinline)) static void scrub_stack() {
  volatile unsigned char area[1 << 20];  // 3.x host code builds large temporaries
  for (size_t i = 0; i < sizeof(area); ++i) area[i] = 0;
}

template <typename Layout>
typename Layout::Stride packed_stride(int rows, int cols) {
  return Layout::packed(cutlass::MatrixCoord(rows, cols)).stride();
}

// Params(Arguments, device_sms, sm_occupancy) of a 2.x universal-style kernel and its launch
// shape: every 2.x GEMM kind whose Params derive from UniversalParamsBase ends here
// (`batch_count`: the grid's batch extent of an array kernel, kArray mode).
template <typename Kernel>
void pack_2x_arguments(typename Kernel::Arguments const &args, PackRequest const &req, PackResult &out,
                       int batch_count = 1) {
  using Params = typename Kernel::Params;
  static_assert(sizeof(Params) <= sizeof(g_params_storage), "Params too large");
  cutlass::gemm::GemmCoord problem(req.m, req.n, req.k);
  std::memset(g_params_storage, 0, sizeof(g_params_storage));
  Params *params = new (g_params_storage) Params(args, req.sm_count, /*sm_occupancy=*/1);
  // init_workspace() would cudaMemset the semaphore; the row's scratch buffer is zeroed
  // by the verifier instead, so only the pointer is stored.
  if (params->get_workspace_size() > 0) params->semaphore = static_cast<int *>(req.workspace);

  dim3 grid = params->get_grid_dims();
  out.bytes = g_params_storage;
  out.size = sizeof(Params);
  out.grid[0] = grid.x; out.grid[1] = grid.y; out.grid[2] = grid.z;
  out.block[0] = Kernel::kThreadCount; out.block[1] = 1; out.block[2] = 1;
  out.cluster[0] = out.cluster[1] = out.cluster[2] = 1;
  out.smem = sizeof(typename Kernel::SharedStorage);
  out.workspace_bytes = params->get_workspace_size();

  // The swizzle's own grid, computed from the problem rather than from Params.
  using Swizzle = typename Kernel::ThreadblockSwizzle;
  using Tile = typename Kernel::ThreadblockShape;
  Swizzle swizzle;
  cutlass::gemm::GemmCoord tiled = swizzle.get_tiled_shape(
      problem, {Tile::kM, Tile::kN, Tile::kK}, batch_count);
  dim3 check = swizzle.get_grid_shape(tiled);
  out.check_grid[0] = check.x; out.check_grid[1] = check.y; out.check_grid[2] = check.z;
  out.check_block = cutlass::gemm::device::GemmUniversalAdapter<Kernel>::GemmKernel::kThreadCount;
  out.check_smem = cutlass::gemm::device::GemmUniversalBase<Kernel>::kSharedStorageSize;
}

// CUTLASS 2.x GemmUniversal: Params(Arguments, device_sms, sm_occupancy).
template <typename Kernel>
void pack_2x(PackRequest const &req, PackResult &out) {
  using Arguments = typename Kernel::Arguments;
  using EpilogueParams = typename Kernel::EpilogueOutputOp::Params;
  using Element = typename Kernel::EpilogueOutputOp::ElementCompute;

  cutlass::gemm::GemmCoord problem(req.m, req.n, req.k);
  Arguments args(
      cutlass::gemm::GemmUniversalMode::kGemm, problem, /*batch_count=*/1,
      EpilogueParams(Element(req.alpha), Element(req.beta)),
      req.a, req.b, req.c, req.d,
      /*batch strides*/ 0, 0, 0, 0,
      packed_stride<typename Kernel::LayoutA>(req.m, req.k).at(0),
      packed_stride<typename Kernel::LayoutB>(req.k, req.n).at(0),
      packed_stride<typename Kernel::LayoutC>(req.m, req.n).at(0),
      packed_stride<typename Kernel::LayoutC>(req.m, req.n).at(0));
  pack_2x_arguments<Kernel>(args, req, out);
}


#ifdef CUTLASS_PACK_3X
// Params from a 3.x kernel's Arguments (to_underlying_arguments with the request's SM count,
// never queried) and the launch shape the kernel states for them: every 3.x GEMM kind's
// packer fills its Arguments and ends here.
template <typename Kernel>
void pack_3x_arguments(typename Kernel::Arguments const &args, PackRequest const &req, PackResult &out) {
  using Params = typename Kernel::Params;
  static_assert(sizeof(Params) <= sizeof(g_params_storage), "Params too large");
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

// The plain GEMM's mainloop needs nothing beyond A and B; a kind whose mainloop takes
// further arguments (scales, zero points) passes its own filler to pack_3x.
struct NoMainloopExtras {
  template <typename Kernel, typename Arguments>
  static void fill(Arguments &, PackRequest const &) {}
};

// CUTLASS 3.x GemmUniversal: Params = to_underlying_arguments(Arguments, workspace) with the
// SM count given (never queried).
template <typename Kernel, typename MainloopExtras = NoMainloopExtras>
void pack_3x(PackRequest const &req, PackResult &out) {
  using Params = typename Kernel::Params;
  using Arguments = typename Kernel::Arguments;
  static_assert(sizeof(Params) <= sizeof(g_params_storage), "Params too large");
  using StrideA = typename Kernel::StrideA;
  using StrideB = typename Kernel::StrideB;
  using StrideC = typename Kernel::StrideC;
  using StrideD = typename Kernel::StrideD;

  Arguments args{};
  args.mode = cutlass::gemm::GemmUniversalMode::kGemm;
  args.problem_shape = {req.m, req.n, req.k, 1};
  args.mainloop.ptr_A = static_cast<typename Kernel::ElementA const *>(req.a);
  args.mainloop.dA = cutlass::make_cute_packed_stride(StrideA{}, cute::make_shape(req.m, req.k, 1));
  args.mainloop.ptr_B = static_cast<typename Kernel::ElementB const *>(req.b);
  args.mainloop.dB = cutlass::make_cute_packed_stride(StrideB{}, cute::make_shape(req.n, req.k, 1));
  MainloopExtras::template fill<Kernel>(args, req);
  args.epilogue.thread.alpha = req.alpha;
  args.epilogue.thread.beta = req.beta;
  args.epilogue.ptr_C = static_cast<typename Kernel::ElementC const *>(req.c);
  args.epilogue.dC = cutlass::make_cute_packed_stride(StrideC{}, cute::make_shape(req.m, req.n, 1));
  args.epilogue.ptr_D = static_cast<typename Kernel::ElementD *>(req.d);
  args.epilogue.dD = cutlass::make_cute_packed_stride(StrideD{}, cute::make_shape(req.m, req.n, 1));
  args.hw_info.device_id = 0;
  args.hw_info.sm_count = req.sm_count;

  pack_3x_arguments<Kernel>(args, req, out);
}
#endif

// The tensor maps encoded while packing, or an empty list (2.x kernels have none).
static void print_tensormaps() {
#ifdef CUTLASS_PACK_3X
  print_tensormap_records();
#else
  std::printf("[]");
#endif
}

static void print_result(const char *name, PackResult const &r) {
  std::printf("{\"kernel\": \"%s\", \"params_hex\": \"", name);
  for (size_t i = 0; i < r.size; ++i) std::printf("%02x", r.bytes[i]);
  std::printf("\", \"grid\": [%u, %u, %u], \"block\": [%u, %u, %u], \"cluster\": [%u, %u, %u], "
              "\"dynamic_smem\": %zu, \"workspace_bytes\": %zu, "
              "\"check_grid\": [%u, %u, %u], \"check_block\": %u, \"check_smem\": %zu, "
              "\"tensormaps\": ",
              r.grid[0], r.grid[1], r.grid[2], r.block[0], r.block[1], r.block[2],
              r.cluster[0], r.cluster[1], r.cluster[2], r.smem, r.workspace_bytes,
              r.check_grid[0], r.check_grid[1], r.check_grid[2], r.check_block, r.check_smem);
  print_tensormaps();
  std::printf("}\n");
}


static void *parse_pointer(const char *text) {
  return reinterpret_cast<void *>(std::strtoull(text, nullptr, 16));
}

// The optional `@SLOT=PTR` and `NAME=VALUE` tokens after the twelve fixed fields.
static bool parse_extras(const char *rest, PackRequest &req) {
  char token[256];
  int used = 0;
  while (std::sscanf(rest, "%255s%n", token, &used) == 1) {
    rest += used;
    char *eq = std::strchr(token, '=');
    if (!eq || eq == token || eq - token > 31) return false;
    *eq = '\0';
    if (token[0] == '@') {
      if (req.extra_slots == kMaxExtras) return false;
      std::strcpy(req.slot_names[req.extra_slots], token + 1);
      req.slot_pointers[req.extra_slots++] = parse_pointer(eq + 1);
    } else {
      if (req.extra_params == kMaxExtras) return false;
      std::strcpy(req.param_names[req.extra_params], token);
      req.param_values[req.extra_params++] = std::strtod(eq + 1, nullptr);
    }
  }
  return true;
}

// Reads requests, one per line: KERNEL M N K ALPHA BETA SM_COUNT A B C D WORKSPACE.
static int packer_main(PackEntry const *entries, size_t count, int, char **) {
  char line[8192];
  while (std::fgets(line, sizeof(line), stdin)) {
    char name[1024], pa[32], pb[32], pc[32], pd[32], pw[32];
    PackRequest req;
    int fixed_end = 0;
    scrub_stack();
    if (std::sscanf(line, "%1023s %d %d %d %lf %lf %d %31s %31s %31s %31s %31s%n", name, &req.m,
                    &req.n, &req.k, &req.alpha, &req.beta, &req.sm_count, pa, pb, pc, pd, pw,
                    &fixed_end) != 12 || !parse_extras(line + fixed_end, req)) {
      std::printf("{\"error\": \"bad request line\"}\n");
      continue;
    }
    req.a = parse_pointer(pa); req.b = parse_pointer(pb); req.c = parse_pointer(pc);
    req.d = parse_pointer(pd); req.workspace = parse_pointer(pw);
    bool found = false;
    for (size_t i = 0; i < count; ++i) {
      if (std::strcmp(entries[i].name, name) == 0) {
        PackResult result{};
        // Packed twice, the second kept: on a process's first pack, some 3.x Params bytes
        // that CUTLASS never writes (TMA copy atoms' padding) show stale memory from the
        // top of the stack (environment strings) that scrubbing below main cannot reach.
        // The second pack finds them as the first left them, the same in every process.
        for (int pass = 0; pass < 2; ++pass) {
          scrub_stack();
          entries[i].fn(req, result);
        }
        print_result(name, result);
        found = true;
        break;
      }
    }
    if (!found) std::printf("{\"kernel\": \"%s\", \"error\": \"unknown kernel\"}\n", name);
    std::fflush(stdout);
  }
  return 0;
}
