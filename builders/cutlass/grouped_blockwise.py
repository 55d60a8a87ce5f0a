"""CUTLASS's grouped blockwise-scaled FP8 GEMMs (``GroupedBlockwiseUniversal3x``: SM90
``KernelPtrArrayTmaWarpSpecializedCooperativeFP8Blockwise`` mainloops) as rows of the
``grouped_blockwise_scaled_gemm`` problem (dataset_spec/ops/grouped_blockwise_gemm.py).

They build like the 3.x grouped kernels (builders/cutlass/grouped.py: one work item per
family and grouped size, Params pointing at device tables) with two more tables, ``ptr_SFA``
and ``ptr_SFB`` (each problem's scales), which the packer template (host/grouped_blockwise.h)
puts in the mainloop Arguments. The scale granularities come from the generator
(``Sm90BlockwiseScaleConfig<gm, gn, gk>``, MN-major scales, as for BlockwiseUniversal3x).
The ptr-array mainloop loads scales with 4-byte cp.async, so no scale count needs TMA
alignment; a TMA epilogue's 16-byte rows of D (and C) are grouped.py's rule for every grouped
kind (``grouped._contiguous``).
"""
from __future__ import annotations

from builders.cutlass.catalog import DTYPE_NAMES
from builders.moe_shapes import grouped_label
from dataset_spec.ops.grouped_blockwise_gemm import OP, SCALE_TABLES, make_grouped_blockwise_problem

GEMM_KIND = "GroupedBlockwiseUniversal3x"
SCALE_LAYOUT = "col"  # SM90 ScaleConfig: MN-major SFA and SFB
LAYOUT_WORDS = {"n": "col", "t": "row"}  # 3.x kernels keep the library's terms


def is_grouped_blockwise(spec) -> bool:
    return spec.knobs.get("gemm_kind") == GEMM_KIND


def granularity(spec) -> tuple:
    """(gm, gn, gk): the kernel's ScaleConfig granularities."""
    return tuple(int(v) for v in spec.knobs["scale_granularity"])


def _layouts(spec) -> dict:
    return {x: LAYOUT_WORDS[spec.knobs[f"layout_{x}"]] for x in ("a", "b", "c")}


def family_id(spec, alpha: float, beta: float) -> str:
    """Element types, layouts, scale granularities and epilogue: the function without its sizes."""
    k = spec.knobs
    gm, gn, gk = granularity(spec)
    types = "_".join([k["element_a"], k["element_b"], k["element_accumulator"]]
                     + ([f"c{k['element_c']}"] if beta != 0 else []) + [k["element_d"]])
    layouts = "".join(_layouts(spec)[x][0] for x in ("a", "b", "c"))
    return f"cutlass/{OP.replace('_scaled', '')}/{types}/{layouts}/sfa{gm}x{gk}_sfb{gn}x{gk}/a{alpha:g}b{beta:g}"


def group_id(spec, size, alpha: float, beta: float) -> str:
    return f"{family_id(spec, alpha, beta)}/{grouped_label(size)}"


def table_slots(spec, grouped_tables: tuple) -> tuple:
    """The grouped GEMM's tables plus each problem's scale pointers."""
    return tuple(grouped_tables) + SCALE_TABLES


def make_problem(spec, size, alpha: float, beta: float):
    k = spec.knobs
    gm, gn, gk = granularity(spec)
    dtypes = {name: DTYPE_NAMES[k[f"element_{name.lower()}"]] for name in ("A", "B", "D")}
    if beta != 0:  # a void-C kernel's row is not_applicable (epilogue_misfit) but still states its problem
        dtypes["C"] = DTYPE_NAMES[k["element_c"] if k["element_c"] != "void" else k["element_d"]]
    layouts = dict(_layouts(spec), sfa=SCALE_LAYOUT, sfb=SCALE_LAYOUT)
    return make_grouped_blockwise_problem(group_id(spec, size, alpha, beta), size, dtypes, (gm, gk), (gn, gk),
                                          layouts, alpha, beta)
