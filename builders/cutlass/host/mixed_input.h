// Params packer for CUTLASS 3.x mixed-input GEMMs with scales (ScaleOnly) and zero points
// (ScaleWithZeroPoint): the mainloop's ptr_S, dS, group_size and ptr_Z, from the request's
// @S / @Z slots and its group_size value (builders/cutlass/mixed_input.py).
#pragma once

struct MixedInputScales {
  template <typename Kernel, typename Arguments>
  static void fill(Arguments &args, PackRequest const &req) {
    using Mainloop = typename Kernel::CollectiveMainloop;
    int group_size = static_cast<int>(req.param("group_size", req.k));
    int scale_k = (req.k + group_size - 1) / group_size;
    // (M, K / group_size, L) scales, M-major: the mainloop's StrideScale is (1, M, M * groups)
    args.mainloop.ptr_S = static_cast<typename Mainloop::NonVoidElementScale const *>(req.ptr("S"));
    args.mainloop.dS = typename Mainloop::NonVoidStrideScale{
        cute::Int<1>{}, static_cast<int64_t>(req.m), static_cast<int64_t>(req.m) * scale_k};
    args.mainloop.group_size = group_size;
    if constexpr (!cute::is_void_v<typename Mainloop::ElementZero>) {
      args.mainloop.ptr_Z = static_cast<typename Mainloop::ElementZero const *>(req.ptr("Z"));
    }
  }
};

template <typename Kernel>
void pack_mixed_input_3x(PackRequest const &req, PackResult &out) {
  pack_3x<Kernel, MixedInputScales>(req, out);
}
