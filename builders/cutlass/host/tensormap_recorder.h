// Host-side stand-in for the driver's cuTensorMapEncodeTiled and cuTensorMapEncodeIm2col,
// linked into the Params packer.
//
// CUTLASS 3.x TMA kernels keep CUtensorMap descriptors in their Params, and only a CUDA
// driver can encode one (the encoding is opaque and embeds the global address). The packer
// is built with CUTLASS_ENABLE_DIRECT_CUDA_DRIVER_CALL, so CUTLASS calls this function by
// name; it records every argument and writes a findable marker where the descriptor goes.
// The builder then stores the recorded arguments in the row, and the verifier encodes the
// real descriptor with its own driver and buffer address.
#pragma once

#include <cuda.h>
#include <cstdint>
#include <cstdio>
#include <cstring>

struct TensorMapRecord {
  bool im2col;  // cuTensorMapEncodeIm2col (3.x convolutions) rather than cuTensorMapEncodeTiled
  int data_type;
  unsigned rank;
  unsigned long long global_address;
  unsigned long long global_dim[5];
  unsigned long long global_strides[4];  // bytes, dimensions 1..rank-1 (dimension 0 is packed)
  unsigned box_dim[5];
  unsigned element_strides[5];
  int interleave, swizzle, l2_promotion, oob_fill;
  // im2col only: the bounding box corners (rank - 2 spatial dims, innermost first) and the
  // box of channels x pixels that one load brings.
  int lower_corner[3], upper_corner[3];
  unsigned channels_per_pixel, pixels_per_column;
};

static const int kMaxTensorMaps = 32;
static TensorMapRecord g_tensormaps[kMaxTensorMaps];
static int g_tensormap_count = 0;
// Bytes 0..7 of a marked descriptor; bytes 8..15 hold the record index, the rest are zero.
static const unsigned char kTensorMapMagic[8] = {'P', 'T', 'X', 'D', 'S', 'T', 'M', 'A'};

static void reset_tensormap_records() { g_tensormap_count = 0; }

// Records the arguments both encodes share; null when the record table is full or the rank bad.
static TensorMapRecord *new_tensormap_record(CUtensorMapDataType tensorDataType, cuuint32_t tensorRank,
                                             void *globalAddress, const cuuint64_t *globalDim,
                                             const cuuint64_t *globalStrides, const cuuint32_t *elementStrides,
                                             CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                                             CUtensorMapL2promotion l2Promotion, CUtensorMapFloatOOBfill oobFill) {
  if (g_tensormap_count >= kMaxTensorMaps || tensorRank < 1 || tensorRank > 5) return nullptr;
  TensorMapRecord &r = g_tensormaps[g_tensormap_count];
  std::memset(&r, 0, sizeof(r));
  r.data_type = static_cast<int>(tensorDataType);
  r.rank = tensorRank;
  r.global_address = reinterpret_cast<unsigned long long>(globalAddress);
  for (unsigned i = 0; i < tensorRank; ++i) {
    r.global_dim[i] = globalDim[i];
    r.element_strides[i] = elementStrides[i];
    if (i + 1 < tensorRank) r.global_strides[i] = globalStrides[i];
  }
  r.interleave = static_cast<int>(interleave);
  r.swizzle = static_cast<int>(swizzle);
  r.l2_promotion = static_cast<int>(l2Promotion);
  r.oob_fill = static_cast<int>(oobFill);
  return &r;
}

// Writes the findable marker (magic + record index) where the descriptor goes.
static void mark_tensormap(CUtensorMap *tensorMap) {
  uint64_t index = static_cast<uint64_t>(g_tensormap_count++);
  std::memset(tensorMap, 0, sizeof(CUtensorMap));
  std::memcpy(tensorMap, kTensorMapMagic, sizeof(kTensorMapMagic));
  std::memcpy(reinterpret_cast<unsigned char *>(tensorMap) + 8, &index, sizeof(index));
}

extern "C" CUresult CUDAAPI cuTensorMapEncodeTiled(
    CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType, cuuint32_t tensorRank,
    void *globalAddress, const cuuint64_t *globalDim, const cuuint64_t *globalStrides,
    const cuuint32_t *boxDim, const cuuint32_t *elementStrides, CUtensorMapInterleave interleave,
    CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
    CUtensorMapFloatOOBfill oobFill) {
  TensorMapRecord *r = new_tensormap_record(tensorDataType, tensorRank, globalAddress, globalDim, globalStrides,
                                            elementStrides, interleave, swizzle, l2Promotion, oobFill);
  if (!r) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < tensorRank; ++i) r->box_dim[i] = boxDim[i];
  mark_tensormap(tensorMap);
  return CUDA_SUCCESS;
}

// The driver allows im2col maps of rank 3..5 (a channel, 1..3 spatial dims and a batch dim).
extern "C" CUresult CUDAAPI cuTensorMapEncodeIm2col(
    CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType, cuuint32_t tensorRank,
    void *globalAddress, const cuuint64_t *globalDim, const cuuint64_t *globalStrides,
    const int *pixelBoxLowerCorner, const int *pixelBoxUpperCorner, cuuint32_t channelsPerPixel,
    cuuint32_t pixelsPerColumn, const cuuint32_t *elementStrides, CUtensorMapInterleave interleave,
    CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion, CUtensorMapFloatOOBfill oobFill) {
  if (tensorRank < 3) return CUDA_ERROR_INVALID_VALUE;
  TensorMapRecord *r = new_tensormap_record(tensorDataType, tensorRank, globalAddress, globalDim, globalStrides,
                                            elementStrides, interleave, swizzle, l2Promotion, oobFill);
  if (!r) return CUDA_ERROR_INVALID_VALUE;
  r->im2col = true;
  for (unsigned i = 0; i + 2 < tensorRank; ++i) {
    r->lower_corner[i] = pixelBoxLowerCorner[i];
    r->upper_corner[i] = pixelBoxUpperCorner[i];
  }
  r->channels_per_pixel = channelsPerPixel;
  r->pixels_per_column = pixelsPerColumn;
  mark_tensormap(tensorMap);
  return CUDA_SUCCESS;
}

static void print_list(const char *key, const unsigned long long *values, unsigned n) {
  std::printf("\"%s\": [", key);
  for (unsigned i = 0; i < n; ++i) std::printf("%s%llu", i ? ", " : "", values[i]);
  std::printf("]");
}

static void print_list(const char *key, const int *values, unsigned n) {
  std::printf("\"%s\": [", key);
  for (unsigned i = 0; i < n; ++i) std::printf("%s%d", i ? ", " : "", values[i]);
  std::printf("]");
}

static void print_list(const char *key, const unsigned *values, unsigned n) {
  std::printf("\"%s\": [", key);
  for (unsigned i = 0; i < n; ++i) std::printf("%s%u", i ? ", " : "", values[i]);
  std::printf("]");
}

// The records as a JSON list (the value of the result's "tensormaps" key). Tiled records keep
// their original keys; im2col ones add "encode": "im2col" and its own arguments instead of
// box_dim.
static void print_tensormap_records() {
  std::printf("[");
  for (int i = 0; i < g_tensormap_count; ++i) {
    TensorMapRecord const &r = g_tensormaps[i];
    std::printf("%s{\"data_type\": %d, \"rank\": %u, \"global_address\": \"%llx\", ", i ? ", " : "",
                r.data_type, r.rank, r.global_address);
    print_list("global_dim", r.global_dim, r.rank);
    std::printf(", ");
    print_list("global_strides", r.global_strides, r.rank - 1);
    std::printf(", ");
    if (r.im2col) {
      std::printf("\"encode\": \"im2col\", ");
      print_list("pixel_box_lower_corner", r.lower_corner, r.rank - 2);
      std::printf(", ");
      print_list("pixel_box_upper_corner", r.upper_corner, r.rank - 2);
      std::printf(", \"channels_per_pixel\": %u, \"pixels_per_column\": %u, ", r.channels_per_pixel,
                  r.pixels_per_column);
    } else {
      print_list("box_dim", r.box_dim, r.rank);
      std::printf(", ");
    }
    print_list("element_strides", r.element_strides, r.rank);
    std::printf(", \"interleave\": %d, \"swizzle\": %d, \"l2_promotion\": %d, \"oob_fill\": %d}",
                r.interleave, r.swizzle, r.l2_promotion, r.oob_fill);
  }
  std::printf("]");
}
