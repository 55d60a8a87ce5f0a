"""Write the CUDA translation units for a batch of CUTLASS convolutions.

The kernel unit holds the generator's own instance declarations (``EmitConv2dInstance`` /
``EmitConv3dInstance`` for 2.x, ``EmitConv3xInstance`` for the SM90 3.x kernels; the
profiler library's ``struct <name> : <name>_base``) and one explicit instantiation of the
kernel's entry per kernel (``cutlass::Kernel<name>`` for 2.x, ``cutlass::device_kernel<name>``
for 3.x); the packer unit holds the same declarations and host/conv_packer.h's Params
packing code (host/conv3x_packer.h for 3.x).
"""
from __future__ import annotations

from builders.cutlass.conv_catalog import load_conv_operations

CONV_PACKER = "conv_packer.h"
CONV3X_PACKER = "conv3x_packer.h"
INCLUDES = [
    "cutlass/cutlass.h", "cutlass/numeric_types.h", "cutlass/arch/arch.h", "cutlass/arch/mma.h",
    "cutlass/conv/kernel/default_conv2d_fprop.h", "cutlass/conv/kernel/default_conv2d_group_fprop.h",
    "cutlass/conv/kernel/default_conv2d_dgrad.h", "cutlass/conv/kernel/default_conv2d_wgrad.h",
    "cutlass/conv/kernel/default_conv3d_fprop.h", "cutlass/conv/kernel/default_conv3d_dgrad.h",
    "cutlass/conv/kernel/default_conv3d_wgrad.h", "cutlass/conv/device/implicit_gemm_convolution.h",
]
# What the generator's conv3x_emitter.py includes (EmitConv3xIncludes), less the profiler's own.
INCLUDES_3X = [
    "cutlass/cutlass.h", "cutlass/numeric_types.h",
    "cutlass/conv/device/conv_universal_adapter.hpp", "cutlass/conv/kernel/conv_universal.hpp",
    "cutlass/conv/collective/collective_builder.hpp", "cutlass/epilogue/collective/collective_builder.hpp",
]


def _includes(specs) -> list:
    return INCLUDES_3X if all(s.generation == 3 for s in specs) else INCLUDES


def conv_declaration(spec) -> str:
    """The generator's ``<name>_base`` alias and the library's ``struct <name>``."""
    from cutlass_library.conv2d_operation import EmitConv2dInstance
    from cutlass_library.conv3d_operation import EmitConv3dInstance
    from cutlass_library.conv3x_emitter import EmitConv3xInstance
    if spec.generation == 3:
        emitter = EmitConv3xInstance()
    else:
        emitter = EmitConv3dInstance() if spec.dims == 3 else EmitConv2dInstance()
    body = emitter.emit(load_conv_operations(spec.sm)[spec.name])
    return f"{body}\nstruct {spec.name} : public {spec.name}_base {{ }};\n"


def conv_entry(spec) -> str:
    """The explicit instantiation of the kernel's ``__global__`` entry."""
    if spec.generation == 3:
        return (f"template __global__ void cutlass::device_kernel<{spec.name}>("
                f"CUTLASS_GRID_CONSTANT {spec.name}::Params const);\n")
    return f"template __global__ void cutlass::Kernel<{spec.name}>({spec.name}::Params);\n"


def _check_one_generation(specs) -> None:
    if len({s.generation for s in specs}) > 1:
        raise ValueError("a conv batch mixes 2.x and 3.x kernels; build them in separate batches")


def conv_kernel_source(specs) -> str:
    """A translation unit that instantiates exactly the given conv kernels (one generation)."""
    _check_one_generation(specs)
    parts = [f"// CUTLASS convolution instantiations: {len(specs)} kernel(s)\n"]
    parts += [f'#include "{h}"\n' for h in _includes(specs)]
    parts.append('#include "cutlass/device_kernel.h"\n')
    for spec in specs:
        parts.append(conv_declaration(spec))
        parts.append(conv_entry(spec))
    return "".join(parts)


def conv_packer_source(specs) -> str:
    """A host program that packs the conv kernels' ``Params`` (see host/conv_packer.h and,
    for 3.x kernels, host/conv3x_packer.h; build it for sm_90a so that it records TMA
    descriptors)."""
    _check_one_generation(specs)
    is_3x = specs[0].generation == 3
    parts = ["// CUTLASS convolution Params packer\n"]
    parts += [f'#include "{h}"\n' for h in dict.fromkeys(_includes(specs) + INCLUDES)]
    parts.append(f'#include "{CONV_PACKER}"\n')
    if is_3x:
        parts.append(f'#include "{CONV3X_PACKER}"\n')
    for spec in specs:
        parts.append(conv_declaration(spec))
    parts.append("\nstatic const ConvPackEntry kPackers[] = {\n")
    fn = "pack_conv_3x" if is_3x else "pack_conv_2x"
    for spec in specs:
        parts.append(f'  {{"{spec.name}", &{fn}<{spec.name}>}},\n')
    parts.append("};\n\nint main() { return conv_packer_main(kPackers, sizeof(kPackers) / sizeof(kPackers[0])); }\n")
    return "".join(parts)
