"""CUTLASS's blockwise-scaled FP8 GEMMs (``BlockwiseUniversal3x``: SM90
``KernelTmaWarpSpecializedCooperativeFP8Blockwise*`` mainloops) as ``blockwise_scaled_gemm``
problems.

The generator states each kernel's scale granularity (``ScaleFactorM/N/KVecSize``) and
declares it through ``Sm90BlockwiseScaleConfig<gm, gn, gk>``, whose SM90 layouts are
MN-major for both scale tensors: SFA holds ceil(M/gm) x ceil(K/gk) float32 scales with M
fastest, SFB ceil(N/gn) x ceil(K/gk) with N fastest (``tile_atom_to_shape_SFA/SFB``). The
packer template (host/blockwise.h) fills ``ptr_SFA``/``layout_SFA``/``ptr_SFB``/
``layout_SFB`` from the ``SFA`` and ``SFB`` buffer slots.
"""
from __future__ import annotations

from dataset_spec.ops.blockwise_gemm import blockwise_problem
from builders.cutlass.catalog import DTYPE_NAMES, KernelSpec

GEMM_KIND = "BlockwiseUniversal3x"
EXTRA_SLOTS = ("SFA", "SFB")
SCALE_LAYOUT = "col"  # SM90 ScaleConfig: MN-major SFA and SFB
# Above this many scales per CTA tile along M (N) and below it along the other side, the
# mainloop loads SFA (SFB) with TMA (IsTmaLoadSFA in the collective): its rows are then
# 16-byte aligned, so the scale count along M (N) must be a multiple of 4 floats.
SCALE_TMA_THRESHOLD = 32
BLOCKWISE_DEFAULT_PROBLEM = (512, 768, 640)  # five full K blocks of 128; M, N multiples of 256
LAYOUT_WORDS = {"n": "col", "t": "row"}  # as problem.py: 3.x kernels keep the library's terms


def emitter():
    """The generator's own 3.x emitter: it declares the ScaleConfig and the (stride, scale
    layout) operand pairs of blockwise kernels itself."""
    from cutlass_library.gemm_operation import EmitGemmUniversal3xInstance
    return EmitGemmUniversal3xInstance()


def is_blockwise(spec: KernelSpec) -> bool:
    return spec.knobs.get("gemm_kind") == GEMM_KIND


def granularity(spec: KernelSpec) -> tuple:
    """(gm, gn, gk): the kernel's ScaleConfig granularities."""
    return tuple(int(v) for v in spec.knobs["scale_granularity"])


def family_id(spec: KernelSpec, alpha: float, beta: float) -> str:
    """The function without its size: element types, layouts, scale granularities, epilogue."""
    k = spec.knobs
    gm, gn, gk = granularity(spec)
    types = "_".join([k["element_a"], k["element_b"], k["element_accumulator"]]
                     + ([f"c{k['element_c']}"] if beta != 0 else []) + [k["element_d"]])
    layouts = "".join(_layouts(spec)[x][0] for x in ("a", "b", "c"))
    return f"cutlass/blockwise_gemm/{types}/{layouts}/sfa{gm}x{gk}_sfb{gn}x{gk}/a{alpha:g}b{beta:g}"


def _layouts(spec: KernelSpec) -> dict:
    return {x: LAYOUT_WORDS[spec.knobs[f"layout_{x}"]] for x in ("a", "b", "c")}


def tma_scale_operands(spec: KernelSpec) -> tuple:
    """Which of SFA, SFB the mainloop loads with TMA (the collective's IsTmaLoadSFA/SFB)."""
    gm, gn, _ = granularity(spec)
    tile_m, tile_n = spec.knobs["threadblock_tile"][:2]
    per_m, per_n = tile_m // gm, tile_n // gn
    return tuple(name for name, mine, other in (("SFA", per_m, per_n), ("SFB", per_n, per_m))
                 if mine >= SCALE_TMA_THRESHOLD and other < SCALE_TMA_THRESHOLD)


def misfit(spec: KernelSpec, m: int, n: int, k: int) -> str:
    """Why the kernel cannot run (M, N, K) beyond the operand alignments, or ''."""
    gm, gn, _ = granularity(spec)
    counts = {"SFA": (-(-m // gm), "M"), "SFB": (-(-n // gn), "N")}
    for name in tma_scale_operands(spec):
        count, dim = counts[name]
        if count % 4:
            return (f"{spec.name}: {name} is loaded by TMA along {dim} and needs a multiple of 4 scales "
                    f"(16 bytes) there, got {count}")
    if "epi_tma" in spec.name:
        dim = "N" if _layouts(spec)["c"] == "row" else "M"
        extent = {"M": m, "N": n}[dim]
        for label, element in (("D", spec.knobs["element_d"]), ("C", spec.knobs["element_c"])):
            if element == "void":
                continue
            size = {"e4m3": 1, "e5m2": 1, "bf16": 2, "f16": 2, "f32": 4}[element]
            if (extent * size) % 16:
                return (f"{spec.name}: its TMA epilogue stores {label} along {dim} in 16-byte rows, "
                        f"so {dim}={extent} must be a multiple of {16 // size}")
    return ""


def make_problem(spec: KernelSpec, group: str, m: int, n: int, k: int, alpha: float, beta: float):
    knobs = spec.knobs
    gm, gn, gk = granularity(spec)
    dtypes = {name: DTYPE_NAMES[knobs[f"element_{name.lower()}"]] for name in ("A", "B", "D")}
    if beta != 0 and knobs["element_c"] != "void":
        dtypes["C"] = DTYPE_NAMES[knobs["element_c"]]
    layouts = dict(_layouts(spec), sfa=SCALE_LAYOUT, sfb=SCALE_LAYOUT)
    return blockwise_problem(group, m, n, k, dtypes, (gm, gk), (gn, gk), layouts, alpha, beta)
