"""Write the CUDA translation units for a batch of CUTLASS 2.x convolutions.

The kernel unit holds the generator's own instance declarations (``EmitConv2dInstance`` /
``EmitConv3dInstance``, the profiler library's ``struct <name> : <name>_base``) and one
explicit instantiation of ``cutlass::Kernel<name>`` per kernel; the packer unit holds the
same declarations and host/conv_packer.h's Params packing code.
"""
from __future__ import annotations

from builders.cutlass.conv_catalog import load_conv_operations

CONV_PACKER = "conv_packer.h"
INCLUDES = [
    "cutlass/cutlass.h", "cutlass/numeric_types.h", "cutlass/arch/arch.h", "cutlass/arch/mma.h",
    "cutlass/conv/kernel/default_conv2d_fprop.h", "cutlass/conv/kernel/default_conv2d_group_fprop.h",
    "cutlass/conv/kernel/default_conv2d_dgrad.h", "cutlass/conv/kernel/default_conv2d_wgrad.h",
    "cutlass/conv/kernel/default_conv3d_fprop.h", "cutlass/conv/kernel/default_conv3d_dgrad.h",
    "cutlass/conv/kernel/default_conv3d_wgrad.h", "cutlass/conv/device/implicit_gemm_convolution.h",
]


def conv_declaration(spec) -> str:
    """The generator's ``<name>_base`` alias and the library's ``struct <name>``."""
    from cutlass_library.conv2d_operation import EmitConv2dInstance
    from cutlass_library.conv3d_operation import EmitConv3dInstance
    emitter = EmitConv3dInstance() if spec.dims == 3 else EmitConv2dInstance()
    body = emitter.emit(load_conv_operations(spec.sm)[spec.name])
    return f"{body}\nstruct {spec.name} : public {spec.name}_base {{ }};\n"


def conv_kernel_source(specs) -> str:
    """A translation unit that instantiates exactly the given conv kernels."""
    parts = [f"// CUTLASS convolution instantiations: {len(specs)} kernel(s)\n"]
    parts += [f'#include "{h}"\n' for h in INCLUDES]
    parts.append('#include "cutlass/device_kernel.h"\n')
    for spec in specs:
        parts.append(conv_declaration(spec))
        parts.append(f"template __global__ void cutlass::Kernel<{spec.name}>({spec.name}::Params);\n")
    return "".join(parts)


def conv_packer_source(specs) -> str:
    """A host program that packs the conv kernels' ``Params`` (see host/conv_packer.h)."""
    parts = ["// CUTLASS convolution Params packer\n"]
    parts += [f'#include "{h}"\n' for h in INCLUDES]
    parts.append(f'#include "{CONV_PACKER}"\n')
    for spec in specs:
        parts.append(conv_declaration(spec))
    parts.append("\nstatic const ConvPackEntry kPackers[] = {\n")
    for spec in specs:
        parts.append(f'  {{"{spec.name}", &pack_conv_2x<{spec.name}>}},\n')
    parts.append("};\n\nint main() { return conv_packer_main(kPackers, sizeof(kPackers) / sizeof(kPackers[0])); }\n")
    return "".join(parts)
