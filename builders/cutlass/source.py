"""Write the minimal CUDA translation units for a batch of CUTLASS kernels.

Each unit holds the generator's own instance declarations (``EmitGemmUniversalInstance`` /
``EmitGemmUniversal3xInstance``), one explicit instantiation of the kernel entry per
instance (``cutlass::Kernel2<Op>`` for 2.x, ``cutlass::device_kernel<Op>`` for 3.x), and,
for the packer, the host-side ``Params`` packing code. No profiler boilerplate.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from builders.cutlass import sparse
from builders.cutlass.catalog import load_manifest_operations

PACKER_CPP = Path(__file__).with_name("host") / "packer.h"


@dataclass(frozen=True)
class KindHooks:
    """How a CUTLASS kernel kind beyond the plain universal GEMM is declared, instantiated
    and packed: its generator emitter, its packer template (in ``header`` under host/) and,
    where it differs, its ``__global__`` entry instantiation."""
    emitter: Callable[[], object]
    packer: str
    header: str
    entry: Optional[Callable[[object], str]] = None
    includes: tuple = ()  # headers the kind's declarations need beyond INCLUDES_2X/3X


def _grouped_2x_emitter():
    from cutlass_library.gemm_operation import EmitGemmGroupedInstance
    return EmitGemmGroupedInstance()


def _planar_complex_emitter():
    from cutlass_library.gemm_operation import EmitGemmPlanarComplexInstance
    return EmitGemmPlanarComplexInstance()


def _planar_complex_array_emitter():
    from cutlass_library.gemm_operation import EmitGemmPlanarComplexArrayInstance
    return EmitGemmPlanarComplexArrayInstance()


def _universal_3x_emitter():
    from cutlass_library.gemm_operation import EmitGemmUniversal3xInstance
    return EmitGemmUniversal3xInstance()


# Keyed by the operation's ``gemm_kind`` (``KernelSpec.knobs["gemm_kind"]``), or by its
# ``mixed_input_mode`` where that changes the mainloop's arguments; one line per kind.
KIND_HOOKS: dict = {
    # 2.x GemmGrouped runs as cutlass::Kernel<Op> (device/base_grouped.h), not Kernel2
    "Grouped": KindHooks(_grouped_2x_emitter, "pack_grouped_2x", "grouped.h",
                         lambda spec: f"template __global__ void cutlass::Kernel<{spec.name}>({spec.name}::Params);\n",
                         ("cutlass/gemm/kernel/gemm_grouped.h", "cutlass/gemm/kernel/default_gemm_grouped.h")),
    "GroupedUniversal3x": KindHooks(_universal_3x_emitter, "pack_grouped_3x", "grouped.h",
                                    includes=("cutlass/gemm/group_array_problem_shape.hpp",)),
    "ScaleOnly": KindHooks(_universal_3x_emitter, "pack_mixed_input_3x", "mixed_input.h"),
    "ScaleWithZeroPoint": KindHooks(_universal_3x_emitter, "pack_mixed_input_3x", "mixed_input.h"),
    "BlockwiseUniversal3x": KindHooks(_universal_3x_emitter, "pack_blockwise_3x", "blockwise.h"),
    # its header includes grouped.h: the packer is pack_grouped_3x with the scale arrays filled in
    "GroupedBlockwiseUniversal3x": KindHooks(_universal_3x_emitter, "pack_grouped_blockwise_3x", "grouped_blockwise.h",
                                             includes=("cutlass/gemm/group_array_problem_shape.hpp",)),
    # 2.x planar complex (GemmPlanarComplex, run as cutlass::Kernel2<Op> like GemmUniversal)
    "PlanarComplex": KindHooks(_planar_complex_emitter, "pack_planar_complex_2x", "planar_complex.h",
                               includes=("cutlass/gemm/kernel/default_gemm_planar_complex_universal.h",)),
    "PlanarComplexArray": KindHooks(_planar_complex_array_emitter, "pack_planar_complex_array_2x",
                                    "planar_complex.h",
                                    includes=("cutlass/gemm/kernel/default_gemm_planar_complex_universal.h",)),
    sparse.KIND: KindHooks(sparse.SparseEmitter, "pack_sparse_2x", "sparse.h", sparse.entry_instantiation),
    sparse.KIND_3X: KindHooks(sparse.emitter_3x, "pack_sparse_3x", "sparse.h"),
}


def _hooks(spec) -> Optional[KindHooks]:
    return KIND_HOOKS.get(spec.knobs.get("mixed_input_mode")) or KIND_HOOKS.get(spec.knobs.get("gemm_kind"))

INCLUDES_2X = [
    "cutlass/cutlass.h", "cutlass/numeric_types.h", "cutlass/arch/arch.h", "cutlass/arch/mma.h",
    "cutlass/layout/matrix.h", "cutlass/gemm/device/gemm_universal_adapter.h",
    "cutlass/gemm/kernel/default_gemm_universal.h",
]
INCLUDES_3X = [
    "cutlass/cutlass.h", "cutlass/gemm/gemm.h", "cutlass/numeric_types.h",
    "cutlass/gemm/kernel/gemm_universal.hpp", "cutlass/gemm/collective/collective_builder.hpp",
    "cutlass/epilogue/collective/collective_builder.hpp", "cutlass/util/packed_stride.hpp",
]


def _operation(spec):
    return load_manifest_operations(spec.sm)[spec.name]


def instance_declaration(spec) -> str:
    """The generator's C++ declaration of ``struct <name>`` (the kernel type)."""
    from cutlass_library.gemm_operation import EmitGemmUniversal3xInstance, EmitGemmUniversalInstance
    hooks = _hooks(spec)
    if hooks is not None:
        emitter = hooks.emitter()
    else:
        emitter = EmitGemmUniversal3xInstance() if spec.generation == 3 else EmitGemmUniversalInstance()
    return emitter.emit(_operation(spec))


def entry_instantiation(spec) -> str:
    """An explicit instantiation of the kernel's ``__global__`` entry."""
    hooks = _hooks(spec)
    if hooks is not None and hooks.entry is not None:
        return hooks.entry(spec)
    if spec.generation == 3:
        return (f"template __global__ void cutlass::device_kernel<{spec.name}>("
                f"CUTLASS_GRID_CONSTANT {spec.name}::Params const);\n")
    return f"template __global__ void cutlass::Kernel2<{spec.name}>({spec.name}::Params);\n"


def _kind_includes(specs) -> list:
    return [h for hooks in map(_hooks, specs) if hooks is not None for h in hooks.includes]


def kernel_source(specs) -> str:
    """A translation unit that instantiates exactly the given kernels."""
    includes = INCLUDES_3X if any(s.generation == 3 for s in specs) else INCLUDES_2X
    parts = [f"// CUTLASS kernel instantiations: {len(specs)} kernel(s)\n"]
    parts += [f'#include "{h}"\n' for h in dict.fromkeys(list(includes) + _kind_includes(specs))]
    parts.append('#include "cutlass/device_kernel.h"\n')
    for spec in specs:
        parts.append(instance_declaration(spec))
        parts.append(entry_instantiation(spec))
    return "".join(parts)


def packer_source(specs) -> str:
    """A host program that packs ``Params`` for the given kernels (see host/packer.h). An
    SM90 packer is built with the 3.x packing code (compile.py), which needs the 3.x
    headers even for 2.x-API kernels (the SM90 DMMA f64 GEMMs)."""
    includes = INCLUDES_2X
    if any(s.generation == 3 or s.sm == 90 for s in specs):
        includes = list(dict.fromkeys(INCLUDES_3X + (INCLUDES_2X if any(s.generation == 2 for s in specs) else [])))
    parts = ["// CUTLASS Params packer\n"]
    parts += [f'#include "{h}"\n' for h in dict.fromkeys(list(includes) + _kind_includes(specs))]
    parts.append('#include "cutlass/gemm/device/gemm_universal_adapter.h"\n')
    parts.append(f'#include "{PACKER_CPP.name}"\n')
    for header in dict.fromkeys(h.header for h in map(_hooks, specs) if h is not None):
        parts.append(f'#include "{header}"\n')
    for spec in specs:
        parts.append(instance_declaration(spec))
    parts.append("\nstatic const PackEntry kPackers[] = {\n")
    for spec in specs:
        hooks = _hooks(spec)
        fn = hooks.packer if hooks is not None else ("pack_3x" if spec.generation == 3 else "pack_2x")
        parts.append(f'  {{"{spec.name}", &{fn}<{spec.name}>}},\n')
    parts.append("};\n\nint main(int argc, char **argv) { return packer_main(kPackers, "
                 "sizeof(kPackers) / sizeof(kPackers[0]), argc, argv); }\n")
    return "".join(parts)
