"""Enumerate CUTLASS GEMM kernels with ``cutlass_library`` and parse their knobs.

The manifest is filled the way the CUTLASS profiler's ``generator.py`` fills it
(``GenerateSM80`` / ``GenerateSM90`` with ``--kernels all``); we keep the dense, real-valued
universal GEMMs (sub-byte operands packed, dataset_spec/packed.py), the grouped ones
(builders/cutlass/grouped.py), the blockwise-scaled FP8 ones, single and grouped, and the
planar complex ones (``BUILT_KINDS``), and describe each by a plain ``KernelSpec``.
``family_table`` lists every GEMM family the generator emits, each either built or excluded
with its reason (docs/cutlass.md, "Families").
"""
from __future__ import annotations

import fnmatch
import functools
import random
import re
from dataclasses import dataclass, field

from dataset_spec.errors import PtxdsError


SM90_TMA_FAMILY = "cutlass3x_sm90_tensorop_gemm_bf16_bf16_f32_bf16_bf16_*_tnn_align8*"
# Families built when the user names none: the seed family, f16, tf32, one SM90 3.x family.
DEFAULT_FAMILIES = (
    # "[0-9]*": the tile follows the types; "_*" would also take the mixed-input kernels
    # (cutlass_tensorop_bf16_s16816gemm_bf16_s8_...), a family of their own
    "cutlass_tensorop_bf16_s16816gemm_bf16_[0-9]*",
    "cutlass_tensorop_f16_s16816gemm_f16_[0-9]*",
    "cutlass_tensorop_s1688gemm_tf32_*",
    # TMA + wgmma, warp-specialized (cooperative, pingpong, plain, stream-K), clusters 2x1 /
    # 1x2, TMA or no-smem epilogue; their CUtensorMaps become tensormap patches.
    SM90_TMA_FAMILY,
)

DTYPE_NAMES = {  # cutlass_library DataTypeNames -> dataset dtype names
    "bf16": "bfloat16", "f16": "float16", "f32": "float32", "tf32": "float32",
    "s8": "int8", "u8": "uint8", "s32": "int32", "f64": "float64",
    "e4m3": "float8_e4m3", "e5m2": "float8_e5m2",
    # packed several to a byte, low bits first (dataset_spec/packed.py)
    "s4": "int4", "u4": "uint4", "s2": "int2", "u2": "uint2",
}
# 1-bit operands: their MMA is a popcount of AND/XOR, not a product of numbers
BINARY = ("b1",)
PACKED_ELEMENTS = ("s2", "u2", "s4", "u4")  # packed several to a byte (dataset_spec/packed.py)
# What the GEMM problem (A, B, C, D, alpha, beta) cannot state for a GEMM kind ptxds does not
# build (every kind the 4.2 generator emits is built now; a new kind states its reason here).
EXTRA_OPERANDS: dict = {}
# GEMM kinds beyond the plain universal ones that ptxds builds (their problems: blockwise.py,
# grouped_blockwise.py, complex.py, planar_complex_array.py).
BUILT_KINDS = ("BlockwiseUniversal3x", "GroupedBlockwiseUniversal3x", "PlanarComplex", "PlanarComplexArray")
# Complex GEMMs whose element types are the parts' (f16, bf16): each operand is a real and an
# imaginary plane, and its ComplexTransform (conjugate or not) is part of the function.
PLANAR_COMPLEX_KINDS = ("PlanarComplex", "PlanarComplexArray")

# 3.x ConvertOnly kernels named ``..._cvt_shfl_...`` read the narrow operand from a
# reordered layout (the generator's compute_memory_reordering_atom), which a caller makes
# with a separate reorder pass; a row's operands are plain row- or column-major arrays.
SHUFFLED_NARROW_OPERAND = ("3.x mixed-input mainloop with a shuffled narrow operand: it reads that "
                           "operand in CUTLASS's reordered layout, not a row- or column-major array")

# s4 x FP8 ScaleOnly kernels take each scale as cutlass::Array<e4m3/e5m2, 8> and convert
# through a lookup table (the mainloop's UseScaleLookupTable): a scale operand of 8 values per
# element, which the mixed_input_gemm problem does not state.
SCALE_LOOKUP_TABLE = ("3.x mixed-input mainloop, s4 x FP8 with scales: each scale is a lookup table of 8 FP8 "
                      "values (cutlass::Array<e4m3, 8>), not one number per group")

NAME_2X = re.compile(
    r"^cutlass_(?P<opcode_class>tensorop|simt|wmma_tensorop)_(?P<extended>.+)_"
    r"(?P<tile_m>\d+)x(?P<tile_n>\d+)_(?P<tile_k>\d+)x(?P<stages>\d+)_"
    r"(?P<layouts>[ntch]{2})_align(?P<alignment>\d+)(?:_schedule(?P<schedule>Device|Host))?$")
NAME_3X = re.compile(  # also the 2.x-API SM90 DMMA kernels, named like 3.x ones
    r"^cutlass(?:3x)?_sm(?P<sm>\d+)_(?P<opcode_class>tensorop|sptensorop|simt)_(?P<extended>.+?)_"
    r"(?P<tile_m>\d+)x(?P<tile_n>\d+)x(?P<tile_k>\d+)_(?P<cluster_m>\d+)x(?P<cluster_n>\d+)x(?P<cluster_k>\d+)_"
    r"(?P<stages>\d+)_(?P<layouts>[ntch]{3})_align(?P<alignment>\d+)(?P<suffix>.*)$")


class CatalogError(PtxdsError, ValueError):
    """A kernel name does not parse, or no kernel matches the request."""


@dataclass
class KernelSpec:
    """One CUTLASS kernel: its procedural name, CUTLASS generation (2 or 3), SM arch and
    every knob (``knobs``), plus the element types and layouts in library (BLAS) terms."""
    name: str
    generation: int
    sm: int
    knobs: dict = field(default_factory=dict)


def parse_name(name: str) -> dict:
    """The knobs a procedural name spells out (tile, stages, layouts, alignment, ...)."""
    m = NAME_3X.match(name) or NAME_2X.match(name)
    if not m:
        raise CatalogError(f"not a CUTLASS GEMM procedural name: {name!r}")
    g = m.groupdict()
    knobs = {
        "opcode_class": g["opcode_class"],
        "extended_name": g["extended"],
        "threadblock_tile": [int(g["tile_m"]), int(g["tile_n"]), int(g["tile_k"])],
        "stages": int(g["stages"]),
        "library_layouts": g["layouts"],
        "alignment": int(g["alignment"]),
    }
    if "cluster_m" in g:
        knobs["cluster_shape"] = [int(g["cluster_m"]), int(g["cluster_n"]), int(g["cluster_k"])]
        suffix = g["suffix"]
        knobs["schedule_suffix"] = suffix
    return knobs


def _enum_name(value) -> str:
    return str(value).split(".")[-1]


def describe_operation(op) -> KernelSpec:
    """A KernelSpec from a ``cutlass_library`` GemmOperation; the name's knobs must agree
    with the operation's own description."""
    from cutlass_library.library import DataTypeNames, ShortLayoutTypeNames, SwizzlingFunctorTag

    name = op.procedural_name()
    knobs = parse_name(name)
    td = op.tile_description
    mi = td.math_instruction
    tile = list(td.threadblock_shape)
    if knobs["threadblock_tile"] != tile and not op.is_3x:
        raise CatalogError(f"{name}: name tile {knobs['threadblock_tile']} != operation tile {tile}")
    warp_count = list(td.warp_count)
    knobs.update({
        "element_a": DataTypeNames[op.A.element],
        "element_b": DataTypeNames[op.B.element],
        "element_c": DataTypeNames[op.C.element],
        "element_d": DataTypeNames[op.D.element],
        "element_accumulator": DataTypeNames[op.accumulator_type()],
        "element_epilogue": DataTypeNames[op.element_epilogue],
        "math_element_a": DataTypeNames[mi.element_a],
        "instruction_shape": list(mi.instruction_shape),
        "math_operation": _enum_name(mi.math_operation),
        "warp_count": warp_count,
        "warp_shape": [tile[i] // max(warp_count[i], 1) for i in range(3)] if not op.is_3x else None,
        "layout_a": ShortLayoutTypeNames[op.A.layout],
        "layout_b": ShortLayoutTypeNames[op.B.layout],
        "layout_c": ShortLayoutTypeNames[op.C.layout],
        "alignment_a": op.A.alignment,
        "alignment_b": op.B.alignment,
        "alignment_c": op.C.alignment,
        "swizzle": SwizzlingFunctorTag[op.swizzling_functor] if not op.is_3x else None,
        "epilogue": _enum_name(op.epilogue_functor),
        "kernel_schedule": _enum_name(op.kernel_schedule),
        "epilogue_schedule": _enum_name(op.epilogue_schedule),
        "tile_scheduler": _enum_name(op.tile_scheduler),
        "gemm_kind": _enum_name(op.gemm_kind),
    })
    if op.is_3x:
        knobs["cluster_shape"] = list(td.cluster_shape)
    if knobs["gemm_kind"] == "Grouped":  # 2.x: where the tile schedule is computed
        knobs["scheduler_mode"] = _enum_name(op.scheduler_mode)
    # conjugate or not, per operand (library terms); planar complex kernels name the parts' types
    if op.is_complex() or knobs["gemm_kind"] in PLANAR_COMPLEX_KINDS:
        knobs["transform_a"] = _enum_name(op.A.complex_transform)
        knobs["transform_b"] = _enum_name(op.B.complex_transform)
    mixed = getattr(op, "mixed_input_mode", None)
    if mixed is not None:  # 3.x mixed input: ConvertOnly (built), ScaleOnly, ScaleWithZeroPoint
        knobs["mixed_input_mode"] = _enum_name(mixed)
    if getattr(op, "ScaleFactorKVecSize", None):  # blockwise scaling: its ScaleConfig granularities
        knobs["scale_granularity"] = [int(op.ScaleFactorMVecSize), int(op.ScaleFactorNVecSize),
                                      int(op.ScaleFactorKVecSize)]
    return KernelSpec(name=name, generation=3 if op.is_3x else 2, sm=int(op.arch), knobs=knobs)


def exclusion_reason(op) -> str:
    """Why ptxds does not build this generator operation, or '' when it does."""
    from cutlass_library.library import DataTypeNames, GemmKind, LayoutType
    plain_layouts = (LayoutType.RowMajor, LayoutType.ColumnMajor)
    kind = _enum_name(op.gemm_kind)
    if op.gemm_kind not in (GemmKind.Universal, GemmKind.Universal3x, GemmKind.Grouped, GemmKind.GroupedUniversal3x,
                            GemmKind.Sparse, GemmKind.SparseUniversal3x) and kind not in BUILT_KINDS:
        return f"{kind} GEMM: {EXTRA_OPERANDS.get(kind, 'not a plain universal GEMM')}"
    mixed = getattr(op, "mixed_input_mode", None)
    if mixed is not None and getattr(op, "mixed_input_shuffle", False):
        return SHUFFLED_NARROW_OPERAND
    if mixed is not None and _enum_name(mixed) != "ConvertOnly" and (
            DataTypeNames[op.A.element] == "s4" and DataTypeNames[op.B.element] in ("e4m3", "e5m2")):
        return SCALE_LOOKUP_TABLE
    elements = [DataTypeNames[t.element] for t in (op.A, op.B, op.C, op.D)]
    if any(e in BINARY for e in elements):
        return ("1-bit operands (b1): the MMA is a popcount of AND/XOR of bit vectors, a function the "
                "GEMM problem (a sum of products of numbers) does not state")
    if op.gemm_kind in (GemmKind.Sparse, GemmKind.SparseUniversal3x) and any(e in PACKED_ELEMENTS for e in elements):
        return ("2:4 sparse with sub-byte operands: the metadata compressor (dataset_spec/sparse_meta.py) "
                "places byte-sized elements only")
    if any(t.layout not in plain_layouts for t in (op.A, op.B, op.C)):
        return "interleaved layout: buffers are row- or column-major arrays"
    if op.is_3x and op.tile_description.cluster_shape[0] <= 0:
        return "dynamic cluster shape: chosen at run time, not by the kernel"
    return ""


def _is_plain_gemm(op) -> bool:
    return exclusion_reason(op) == ""


@dataclass(frozen=True)
class Family:
    """Kernels of one arch, API generation, opcode class, math operation, element types
    and epilogue: what one `--family` glob in the docs' table picks."""
    sm: int
    generation: int
    opcode_class: str
    math_operation: str
    types: str          # A_B_accumulator_C_D (generator names)
    epilogue: str
    kernels: tuple      # procedural names, sorted
    excluded: str = ""  # why ptxds does not build it ('' when it does)

    @property
    def key(self) -> str:
        return (f"sm{self.sm}/{self.generation}.x/{self.opcode_class}/{self.math_operation}/"
                f"{self.types}/{self.epilogue}")


@functools.lru_cache(maxsize=4)
def _all_operations(sm: int, cuda_version: str = "13.0") -> dict:
    """name -> operation for every GEMM the generator emits for ``sm`` (80 or 90)."""
    from cutlass_library import generator
    from cutlass_library.manifest import Manifest

    arch = "90a" if sm == 90 else str(sm)
    args = generator.define_parser().parse_args([
        "--operations", "gemm", "--architectures", arch, "--kernels", "all",
        "--cuda-version", cuda_version, "--log-level", "error"])
    manifest = Manifest(args)
    if sm == 80:
        generator.GenerateSM80(manifest, args.cuda_version)
    elif sm == 90:
        generator.GenerateSM90(manifest, args.cuda_version)
    else:
        raise CatalogError(f"unsupported SM {sm}; choose 80 or 90")
    return {name: op for name, op in manifest.operations_by_name.items() if int(op.arch) == sm}


def _family_of(op) -> tuple:
    from cutlass_library.library import DataTypeNames
    mi = op.tile_description.math_instruction
    types = "_".join(DataTypeNames[t] for t in (op.A.element, op.B.element, op.accumulator_type(),
                                                 op.C.element, op.D.element))
    opcode = _enum_name(mi.opcode_class)
    mixed = getattr(op, "mixed_input_mode", None)
    math = _enum_name(mi.math_operation) + (f"+{_enum_name(mixed)}" if mixed is not None else "")
    return (int(op.arch), 3 if op.is_3x else 2, opcode, math, types, _enum_name(op.epilogue_functor),
            _enum_name(op.gemm_kind))


def _opcode_label(opcode: str, kind: str) -> str:
    """The opcode class, and the GEMM kind where it is not the plain universal one (a
    grouped f16 family is not the plain f16 family of the same types)."""
    return opcode if kind in ("Universal", "Universal3x") else f"{opcode}:{kind}"


def family_key(spec: "KernelSpec") -> str:
    """The ``Family.key`` of a kernel ptxds builds."""
    sm, gen, opcode, math, types, epilogue, kind = _family_of(_all_operations(spec.sm)[spec.name])
    return Family(sm, gen, _opcode_label(opcode, kind), math, types, epilogue, ()).key


def per_family(specs: list, count, seed: int) -> list:
    """At most ``count`` kernels of each family (``family_key``), drawn with ``seed``."""
    if count is None:
        return list(specs)
    by_family = {}
    for spec in specs:
        by_family.setdefault(family_key(spec), []).append(spec)
    chosen = [s for key in sorted(by_family) for s in sample_kernels(by_family[key], count, seed)]
    return sorted(chosen, key=lambda s: (s.sm, s.name))


def family_table(sms=(80, 90)) -> list:
    """Every GEMM family the generator emits for ``sms``, built or excluded (with why)."""
    grouped = {}
    for sm in sms:
        for name, op in _all_operations(sm).items():
            grouped.setdefault(_family_of(op), []).append((name, exclusion_reason(op)))
    families = []
    for (sm, gen, opcode, math, types, epilogue, kind), members in sorted(grouped.items()):
        reasons = sorted({r for _, r in members if r})
        built = sorted(n for n, r in members if not r)
        excluded = "; ".join(reasons) if not built else ""
        names = built or sorted(n for n, _ in members)
        families.append(Family(sm, gen, _opcode_label(opcode, kind), math, types, epilogue, tuple(names), excluded))
    return families


@functools.lru_cache(maxsize=4)
def load_manifest_operations(sm: int, cuda_version: str = "13.0") -> dict:
    """name -> GemmOperation for every GEMM ptxds builds for ``sm`` (80 or 90)."""
    return {name: op for name, op in _all_operations(sm, cuda_version).items() if _is_plain_gemm(op)}


def enumerate_kernels(families=DEFAULT_FAMILIES, archs=("sm_80", "sm_90a")) -> list[KernelSpec]:
    """Every kernel whose name matches one of the ``families`` globs, for the given archs."""
    sms = sorted({90 if a.startswith("sm_90") else int(a.removeprefix("sm_")) for a in archs})
    specs = []
    for sm in sms:
        for name, op in sorted(load_manifest_operations(sm).items()):
            if any(fnmatch.fnmatchcase(name, f) for f in families):
                specs.append(describe_operation(op))
    return specs


def no_match_message(families, archs) -> str:
    """One line for --family globs that match no kernel: the closest names that exist."""
    import difflib
    sms = sorted({90 if a.startswith("sm_90") else int(a.removeprefix("sm_")) for a in archs})
    names = sorted({name for sm in sms for name in load_manifest_operations(sm)})
    closest = []
    for pattern in families:
        stem = pattern.replace("*", "").replace("?", "").split("[")[0]
        closest += [n for n in difflib.get_close_matches(stem, names, n=3, cutoff=0.3) if n not in closest]
    hint = f"closest names: {', '.join(closest[:3])}" if closest else f"e.g. {names[0]}" if names else ""
    return (f"--family {' '.join(repr(f) for f in families)} matches none of the {len(names)} CUTLASS kernels "
            f"for {', '.join(archs)}; {hint} (docs/cutlass.md lists every family)")


def sample_kernels(specs: list, limit, seed: int) -> list:
    """At most ``limit`` kernels, drawn deterministically with ``seed``, in name order."""
    if limit is None or limit >= len(specs):
        return list(specs)
    chosen = random.Random(seed).sample(sorted(specs, key=lambda s: s.name), limit)
    return sorted(chosen, key=lambda s: s.name)


def family_markdown(sms=(80, 90)) -> str:
    """docs/cutlass.md's family tables: built families per (arch, API, opcode class, math
    operation) with their type combinations, then the excluded ones per reason."""
    table = family_table(sms)
    built, excluded = {}, {}
    for f in table:
        if f.excluded:
            entry = excluded.setdefault(f.excluded, [0, 0, set()])
            entry[0] += 1
            entry[1] += len(f.kernels)
            entry[2].add(f"sm{f.sm}")
        else:
            key = (f"sm{f.sm}", f"{f.generation}.x", f.opcode_class, f.math_operation)
            entry = built.setdefault(key, [0, []])
            entry[0] += len(f.kernels)
            entry[1].append(f.types + ("" if f.epilogue == "LinearCombination" else f" ({f.epilogue})"))
    lines = ["| arch | API | opcode | math | kernels | A_B_acc_C_D families |", "|---|---|---|---|---|---|"]
    for (sm, api, opcode, math), (count, types) in sorted(built.items()):
        lines.append(f"| {sm} | {api} | {opcode} | {math} | {count} | {', '.join(sorted(types))} |")
    lines += ["", "| excluded because | families | kernels | archs |", "|---|---|---|---|"]
    for reason, (families, kernels, archs) in sorted(excluded.items(), key=lambda r: -r[1][1]):
        lines.append(f"| {reason} | {families} | {kernels} | {', '.join(sorted(archs))} |")
    return "\n".join(lines) + "\n"
