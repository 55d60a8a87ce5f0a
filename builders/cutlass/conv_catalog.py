"""Enumerate CUTLASS implicit-GEMM convolutions with ``cutlass_library`` and group them.

The manifest is filled the way the profiler's ``generator.py`` fills it for
``--operations conv2d,conv3d`` (``GenerateSM80``: 2.x ``Conv2dOperation`` /
``Conv3dOperation``; ``GenerateSM90``: 3.x ``ConvOperation3x``). ``conv_family_table``
lists every conv family, each built or excluded with its reason (docs/cutlass.md,
"Convolution families"); ``ConvSpec`` describes one kernel with its knobs.
"""
from __future__ import annotations

import fnmatch
import functools
from dataclasses import dataclass, field

from builders.cutlass.catalog import DTYPE_NAMES, CatalogError, _enum_name, sample_kernels

SUB_BYTE = ("b1", "s2", "u2", "s4", "u4")

CONV_KINDS = {0: "fprop", 1: "dgrad", 2: "wgrad"}


@dataclass
class ConvSpec:
    """One CUTLASS convolution kernel: procedural name, generation, SM arch and knobs."""
    name: str
    generation: int
    sm: int
    knobs: dict = field(default_factory=dict)

    @property
    def kind(self) -> str:
        return self.knobs["conv_kind"]

    @property
    def dims(self) -> int:
        return self.knobs["spatial_dims"]


def _dims_of(op) -> int:
    if getattr(op, "is_3x", False):
        return 3 if "Conv3d" in _enum_name(op.operation_kind) else 2
    return 3 if type(op).__name__ == "Conv3dOperation" else 2


def describe_conv(op) -> ConvSpec:
    """A ConvSpec from a ``cutlass_library`` conv operation."""
    from cutlass_library.library import DataTypeNames, ShortLayoutTypeNames
    td = op.tile_description
    mi = td.math_instruction
    is_3x = bool(getattr(op, "is_3x", False))
    d = getattr(op, "D", op.C)
    knobs = {
        "conv_kind": CONV_KINDS[int(op.conv_kind.value if hasattr(op.conv_kind, "value") else op.conv_kind)],
        "spatial_dims": _dims_of(op),
        "opcode_class": _enum_name(mi.opcode_class).lower(),
        "math_operation": _enum_name(mi.math_operation),
        "element_a": DataTypeNames[op.A.element], "element_b": DataTypeNames[op.B.element],
        "element_c": DataTypeNames[op.C.element], "element_d": DataTypeNames[d.element],
        "element_accumulator": DataTypeNames[mi.element_accumulator],
        "math_element_a": DataTypeNames[mi.element_a],
        "element_epilogue": DataTypeNames[getattr(op, "element_epilogue", mi.element_accumulator)],
        "layout": ShortLayoutTypeNames[op.A.layout],
        "alignment_a": op.A.alignment, "alignment_b": op.B.alignment, "alignment_c": op.C.alignment,
        "threadblock_tile": list(td.threadblock_shape),
        "stages": td.stages,
        "instruction_shape": list(mi.instruction_shape),
        "warp_count": list(td.warp_count),
    }
    if is_3x:
        if knobs["element_a"] == "f32":
            # the SM90 conv CollectiveBuilder runs float operands as tfloat32_t GMMA
            # (conv/collective/builders/sm90_gmma_builder.inl); the generator names them f32
            knobs["math_element_a"] = "tf32"
        knobs.update({"cluster_shape": list(td.cluster_shape),
                      "kernel_schedule": _enum_name(op.kernel_schedule),
                      "epilogue_schedule": _enum_name(op.epilogue_schedule)})
    else:
        knobs.update({"iterator_algorithm": _enum_name(op.iterator_algorithm),
                      "stride_support": _enum_name(op.stride_support),
                      "group_mode": _enum_name(op.group_mode) if hasattr(op, "group_mode") else "NoneGroup",
                      "epilogue": _enum_name(op.epilogue_functor),
                      "swizzle": _enum_name(op.swizzling_functor)})
    return ConvSpec(name=op.procedural_name(), generation=3 if is_3x else 2, sm=int(op.arch), knobs=knobs)


# Sub-byte elements the conv problems hold packed (dataset_spec/packed.py), as GEMMs do.
PACKED_CONV_ELEMENTS = ("s4", "u4")
# complex<float> elements: buffers of their float32 parts (dataset_spec/ops/conv_layouts.py).
COMPLEX_PART_DTYPES = {"cf32": "float32"}


def conv_dtype(element: str) -> str:
    """The dataset dtype of a conv element (a complex one's: its parts')."""
    return COMPLEX_PART_DTYPES.get(element) or DTYPE_NAMES[element]


def conv_exclusion_reason(op) -> str:
    """Why ptxds does not build this conv operation, or '' when it does."""
    from dataset_spec.ops.conv_layouts import CHANNELS_LAST, INTERLEAVED
    spec = describe_conv(op)
    k = spec.knobs
    elements = [k[f"element_{x}"] for x in "abcd"]
    unpacked = sorted(set(elements) & set(SUB_BYTE) - set(PACKED_CONV_ELEMENTS))
    if unpacked:
        return f"sub-byte operands ({'/'.join(unpacked)}): dataset_spec/packed.py packs int4/uint4 conv buffers only"
    if k["layout"] not in CHANNELS_LAST and k["layout"] not in INTERLEAVED:
        return f"layout {k['layout']}: conv buffers are channels-last or nc32hw32/nc64hw64 interleaved arrays"
    if any(e not in DTYPE_NAMES and e not in COMPLEX_PART_DTYPES for e in elements):
        return f"element types {'/'.join(elements)} have no dataset dtype"
    if k["math_operation"].startswith("multiply_add_complex") and k["math_operation"] != "multiply_add_complex":
        return f"complex math {k['math_operation']}: the conv bound covers the standard 4-product form only"
    return ""


@functools.lru_cache(maxsize=4)
def all_conv_operations(sm: int, cuda_version: str = "13.0") -> dict:
    """name -> operation for every convolution the generator emits for ``sm`` (80 or 90)."""
    from cutlass_library import generator
    from cutlass_library.manifest import Manifest

    arch = "90a" if sm == 90 else str(sm)
    args = generator.define_parser().parse_args([
        "--operations", "conv2d,conv3d", "--architectures", arch, "--kernels", "all",
        "--cuda-version", cuda_version, "--log-level", "error"])
    manifest = Manifest(args)
    if sm == 80:
        generator.GenerateSM80(manifest, args.cuda_version)
    elif sm == 90:
        generator.GenerateSM90(manifest, args.cuda_version)
    else:
        raise CatalogError(f"unsupported SM {sm}; choose 80 or 90")
    return {name: op for name, op in manifest.operations_by_name.items() if int(op.arch) == sm}


@functools.lru_cache(maxsize=4)
def load_conv_operations(sm: int) -> dict:
    """name -> operation for every convolution ptxds builds for ``sm``."""
    return {n: op for n, op in all_conv_operations(sm).items() if not conv_exclusion_reason(op)}


def conv_family_of(spec: ConvSpec) -> tuple:
    """What one group's members share: arch, API, conv kind and rank, opcode class, math,
    types, epilogue, group mode, and the channel-count iterators (fixed / few channels)
    that only run small C (with their alignment, since fixed channels means C == it)."""
    k = spec.knobs
    types = "_".join(k[f"element_{x}"] for x in ("a", "b", "accumulator", "c", "d"))
    variant = k.get("group_mode", "NoneGroup")
    iterator = k.get("iterator_algorithm", "")
    if iterator in ("FixedChannels", "FewChannels"):
        variant += f"+{iterator}{k['alignment_a']}"
    if k["layout"] not in ("nhwc", "ndhwc"):
        variant += f"+{k['layout']}"
    return (spec.sm, spec.generation, f"conv{spec.dims}d_{spec.kind}", k["opcode_class"], k["math_operation"],
            types, k.get("epilogue", k.get("epilogue_schedule", "")), variant)


@dataclass(frozen=True)
class ConvFamily:
    """Conv kernels that compute one function (one row of docs/cutlass.md's conv table)."""
    sm: int
    generation: int
    conv: str           # conv2d_fprop, conv3d_wgrad, ...
    opcode_class: str
    math_operation: str
    types: str          # A_B_accumulator_C_D (generator names)
    epilogue: str
    variant: str        # group mode, and a channel iterator where it narrows C
    kernels: tuple
    excluded: str = ""

    @property
    def key(self) -> str:
        return (f"sm{self.sm}/{self.generation}.x/{self.conv}/{self.opcode_class}/{self.math_operation}/"
                f"{self.types}/{self.epilogue}/{self.variant}")


def conv_family_key(spec: ConvSpec) -> str:
    return ConvFamily(*conv_family_of(spec), kernels=()).key


def conv_family_table(sms=(80, 90)) -> list:
    """Every conv family the generator emits for ``sms``, built or excluded (with why)."""
    grouped = {}
    for sm in sms:
        for name, op in all_conv_operations(sm).items():
            grouped.setdefault(conv_family_of(describe_conv(op)), []).append((name, conv_exclusion_reason(op)))
    families = []
    for key, members in sorted(grouped.items()):
        reasons = sorted({r for _, r in members if r})
        built = sorted(n for n, r in members if not r)
        names = built or sorted(n for n, _ in members)
        families.append(ConvFamily(*key, kernels=tuple(names), excluded="; ".join(reasons) if not built else ""))
    return families


def enumerate_conv_kernels(families, archs=("sm_80", "sm_90a")) -> list:
    """Every built conv kernel whose name matches one of the ``families`` globs."""
    sms = sorted({90 if a.startswith("sm_90") else int(a.removeprefix("sm_")) for a in archs})
    specs = []
    for sm in sms:
        for name, op in sorted(load_conv_operations(sm).items()):
            if any(fnmatch.fnmatchcase(name, f) for f in families):
                specs.append(describe_conv(op))
    return specs


def per_conv_family(specs: list, count, seed: int) -> list:
    """At most ``count`` kernels of each conv family, drawn with ``seed``."""
    if count is None:
        return list(specs)
    by_family = {}
    for spec in specs:
        by_family.setdefault(conv_family_key(spec), []).append(spec)
    chosen = [s for key in sorted(by_family) for s in sample_kernels(by_family[key], count, seed)]
    return sorted(chosen, key=lambda s: (s.sm, s.name))


def conv_family_markdown(sms=(80, 90)) -> str:
    """docs/cutlass.md's conv tables: built families by (arch, API, conv), excluded by reason."""
    table = conv_family_table(sms)
    built, excluded = {}, {}
    for f in table:
        if f.excluded:
            entry = excluded.setdefault(f.excluded, [0, 0])
            entry[0] += 1
            entry[1] += len(f.kernels)
        else:
            entry = built.setdefault((f.sm, f.generation, f.conv), [0, 0, set()])
            entry[0] += 1
            entry[1] += len(f.kernels)
            entry[2].add(f"{f.types} ({f.math_operation}, {f.variant})")
    lines = ["| arch | API | conv | families | kernels | types (math, variant) |", "|---|---|---|---|---|---|"]
    for (sm, gen, conv), (count, kernels, types) in sorted(built.items()):
        lines.append(f"| sm{sm} | {gen}.x | {conv} | {count} | {kernels} | {'; '.join(sorted(types))} |")
    if excluded:
        lines += ["", "| excluded because | families | kernels |", "|---|---|---|"]
        for reason, (count, kernels) in sorted(excluded.items()):
            lines.append(f"| {reason} | {count} | {kernels} |")
    return "\n".join(lines)
