// Params packer for CUTLASS 3.x grouped blockwise-scaled FP8 GEMMs (GroupedBlockwiseUniversal3x):
// the ptr-array grouped Arguments plus the mainloop's per-problem scale pointer arrays ptr_SFA / ptr_SFB, from the request's ptr_SFA and ptr_SFB slots (device
// tables of each problem's scale address). layout_SFA / layout_SFB stay null: the SM90
// ptr-array blockwise mainloop rebuilds each problem's scale layout from its problem shape
// (load_init: ScaleConfig::tile_atom_to_shape_SFA/SFB) and never reads those arrays.
#pragma once

#include "grouped.h"

#ifdef CUTLASS_PACK_3X
#include <type_traits>

struct GroupedBlockwiseScales {
  template <typename Kernel, typename Arguments>
  static void fill(Arguments &args, PackRequest const &req) {
    using Mainloop = typename Kernel::CollectiveMainloop;
    static_assert(std::is_pointer<typename Mainloop::LayoutSFA>::value &&
                  std::is_pointer<typename Mainloop::LayoutSFB>::value,
                  "a grouped blockwise mainloop takes one scale layout per problem");
    args.mainloop.ptr_SFA = static_cast<decltype(args.mainloop.ptr_SFA)>(req.ptr("ptr_SFA"));
    args.mainloop.layout_SFA = nullptr;
    args.mainloop.ptr_SFB = static_cast<decltype(args.mainloop.ptr_SFB)>(req.ptr("ptr_SFB"));
    args.mainloop.layout_SFB = nullptr;
  }
};

template <typename Kernel>
void pack_grouped_blockwise_3x(PackRequest const &req, PackResult &out) {
  pack_grouped_3x<Kernel, GroupedBlockwiseScales>(req, out);
}
#endif
