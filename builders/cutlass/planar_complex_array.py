"""CUTLASS's planar complex array GEMMs (2.x ``PlanarComplexArray``: ``GemmPlanarComplexArray``
kernels) as rows of the ``grouped_complex_gemm`` problem (dataset_spec/ops/grouped_complex_gemm.py).

The kernel runs one planar complex GEMM per batch index, reading that problem's M, N, K from
``ptr_M/N/K`` and its plane addresses from eight pointer arrays; one leading dimension per
plane serves every problem, so the problems share each operand's contiguous extent. They
plan and build as the grouped kernels (builders/cutlass/grouped.py dispatches here) with
their own tables, in the kernel's terms: the generator's emitter swaps A and B (and their
transforms) for a row-major C, as for every 2.x planar kernel (builders/cutlass/complex.py).
The packer template (host/planar_complex.h, ``pack_planar_complex_array_2x``) takes the
largest M, N, K (the grid) and the three leading dimensions as problem values.
"""
from __future__ import annotations

import math

from builders.cutlass.catalog import DTYPE_NAMES
from builders.cutlass.complex import kernel_transforms
from builders.cutlass.problem import kernel_gemm
from builders.moe_shapes import grouped_label
from dataset_spec.ops.grouped_complex_gemm import OP, TABLE_NAMES, make_grouped_complex_problem

GEMM_KIND = "PlanarComplexArray"


def is_planar_array(spec) -> bool:
    return spec.knobs.get("gemm_kind") == GEMM_KIND


def kernel_layouts(spec) -> dict:
    g = kernel_gemm(spec)
    return {"a": g.layout_a, "b": g.layout_b, "c": g.layout_c}


def family_id(spec, alpha: float, beta: float) -> str:
    g = kernel_gemm(spec)
    types = [g.element_a, g.element_b, g.element_accumulator] + ([f"c{g.element_c}"] if beta != 0 else [])
    layouts = "".join(kernel_layouts(spec)[x][0] for x in "abc")
    conj = "".join("c" if t == "conj" else "n" for t in kernel_transforms(spec))
    return f"cutlass/{OP}/{'_'.join(types + [g.element_d])}/{layouts}/{conj}/planar/a{alpha:g}b{beta:g}"


def group_id(spec, size, alpha: float, beta: float) -> str:
    return f"{family_id(spec, alpha, beta)}/{grouped_label(size)}"


def contiguous(spec) -> dict:
    """Operand -> (the problem dimension its planes are contiguous along, alignment), kernel terms."""
    g, lay = kernel_gemm(spec), kernel_layouts(spec)
    return {"A": ("K" if lay["a"] == "row" else "M", g.alignment_a),
            "B": ("N" if lay["b"] == "row" else "K", g.alignment_b),
            "C": ("N" if lay["c"] == "row" else "M", g.alignment_c)}


def misfit(spec, size) -> str:
    """Why the kernel cannot run every problem of ``size``, or '': each contiguous extent a
    multiple of its alignment, and the same in every problem (one leading dimension)."""
    index = {"M": 0, "N": 1, "K": 2}
    for operand, (dim, align) in contiguous(spec).items():
        extents = sorted({p[index[dim]] for p in size})
        if len(extents) > 1:
            return (f"{spec.name}: every problem must share {operand}'s contiguous extent {dim} (one leading "
                    f"dimension per plane for all problems), got {extents}")
        if extents[0] % align:
            return (f"{spec.name}: {operand}'s contiguous extent {dim}={extents[0]} is not a multiple of its "
                    f"alignment {align}")
    return ""


def fit(specs, size) -> tuple:
    """Every problem rounded up to the alignments, and each dimension some operand is
    contiguous along raised to the group's largest (so the problems share it)."""
    multiple, shared = {"M": 1, "N": 1, "K": 1}, set()
    for spec in specs:
        for dim, align in contiguous(spec).values():
            multiple[dim] = math.lcm(multiple[dim], int(align))
            shared.add(dim)
    top = {d: max(p[i] for p in size) for i, d in enumerate("MNK")}
    return tuple(tuple(-(-(top[d] if d in shared else v) // multiple[d]) * multiple[d] for d, v in zip("MNK", mnk))
                 for mnk in size)


def make_problem(spec, size, alpha: float, beta: float):
    g = kernel_gemm(spec)
    dtypes = {"A": DTYPE_NAMES[g.element_a], "B": DTYPE_NAMES[g.element_b], "D": DTYPE_NAMES[g.element_d],
              "C": DTYPE_NAMES[g.element_c]}
    return make_grouped_complex_problem(group_id(spec, size, alpha, beta), size, dtypes, kernel_layouts(spec),
                                        kernel_transforms(spec), alpha, beta, DTYPE_NAMES[g.element_accumulator])


def table_slots(spec) -> tuple:
    return TABLE_NAMES


def pack_values(spec, size) -> dict:
    """The packer's problem values: the batch, the largest M, N, K and the shared leading dimensions."""
    lay = kernel_layouts(spec)
    m, n, k = (max(p[i] for p in size) for i in range(3))
    ld = {"A": k if lay["a"] == "row" else m, "B": n if lay["b"] == "row" else k, "C": n if lay["c"] == "row" else m}
    return {"problem_count": len(size), "max_m": m, "max_n": n, "max_k": k,
            "ld_A": ld["A"], "ld_B": ld["B"], "ld_C": ld["C"]}
