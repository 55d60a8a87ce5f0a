"""grouped_complex_gemm: G complex GEMMs D_i = alpha op(A_i) @ op(B_i) + beta C_i in one
launch, operands stored as planes (CUTLASS's ``GemmPlanarComplexArray``), alpha and beta real.

Buffers: one buffer per operand holding every problem's operand back to back
(``params.offsets[operand][i]`` elements in), each problem's operand as complex_gemm's planar
storage: its real plane, then its imaginary plane, each in the operand's layout. Every
problem shares each operand's leading dimension (the kernel takes one per plane for all
problems), so the problems share each operand's contiguous extent (a row-major A: K; a
row-major C: N) and may differ in the others; ``params.ld`` records them. ``params``:
``problems`` [M, N, K] per problem, ``layout_a/b/c``, ``complex`` (``transform_a/b``,
``planar``: true), alpha, beta, accumulator.

Device tables (dataset_spec/device_tables.py): ``sizes_M``, ``sizes_N``, ``sizes_K`` (int32,
one per problem) and ``ptr_A_real``, ``ptr_A_imag`` .. ``ptr_D_imag`` (u64 addresses of each
problem's planes; ``ptr_C_*`` name D's planes when there is no C, since the kernel reads the
arrays even when beta = 0).

The reference and the bound are complex_gemm's, problem by problem: each part of D_i is a sum
of 2 K_i real products with complex_gemm's S_re, S_im (docs/verification.md,
"grouped_complex_gemm").
"""
from __future__ import annotations

import numpy as np

from ..device_tables import address_table, values_table
from ..model import DTYPES, Buffer, Problem, SpecError
from . import complex_gemm
from . import grouped_gemm as grouped
from .grouped_gemm import operand_dims, operand_layout, storage_shape
from .spec import OpSpec

OP = "grouped_complex_gemm"
OPERANDS = ("A", "B", "C", "D")
SIZE_TABLES = ("sizes_M", "sizes_N", "sizes_K")
TABLE_NAMES = SIZE_TABLES + tuple(f"ptr_{x}_{part}" for x in OPERANDS for part in ("real", "imag"))
START_ALIGN = 16  # every plane starts 16-byte aligned (128-bit vector loads)


def problems_of(problem: Problem) -> list:
    return grouped.problems_of(problem, OP)


def shared_leading_dimensions(problems: list, layouts: dict, problem_id: str = "") -> dict:
    """{operand: leading dimension}: each operand's contiguous extent, which every problem must share."""
    out = {}
    for operand in OPERANDS:
        layout = operand_layout({f"layout_{k}": v for k, v in layouts.items()}, operand)
        extents = {storage_shape(layout, *operand_dims(operand, *mnk))[1] for mnk in problems}
        if len(extents) != 1:
            dim = {("A", "row"): "K", ("A", "col"): "M", ("B", "row"): "N", ("B", "col"): "K"}.get(
                (operand, layout), "N" if layout == "row" else "M")
            raise SpecError(f"{OP} {problem_id}: every problem must share {operand}'s contiguous extent {dim} "
                            f"(one leading dimension per plane for all problems), got {sorted(extents)}")
        out[operand] = extents.pop()
    return out


def offsets_for(problems: list) -> dict:
    """Element offset of each problem's operand (both planes) in its buffer, plus the total."""
    return grouped.concat_offsets(problems, OPERANDS,
                                  lambda operand, m, n, k: 2 * int(np.prod(operand_dims(operand, m, n, k))))


def members(problem: Problem, inputs: dict) -> list:
    """The group's problems as planar complex_gemm problems over slices of the buffers."""
    p = problem.params
    return grouped.split_members(
        problem, inputs, OPERANDS, "complex_gemm",
        lambda operand, m, n, k: (2,) + storage_shape(operand_layout(p, operand), *operand_dims(operand, m, n, k)),
        dropped=("problems", "offsets", "ld"))


def ref_grouped_complex(inputs, problem):
    return grouped.per_member(problem, members(problem, inputs),
                              lambda m: complex_gemm.ref_complex_gemm(m.inputs, m.problem)["D"])


def scale_grouped_complex(inputs, problem):
    return grouped.per_member(problem, members(problem, inputs),
                              lambda m: complex_gemm.scale_complex_gemm(m.inputs, m.problem)["D"])


def pointwise_grouped_complex(inputs, problem, reference):
    return grouped.per_member(problem, members(problem, inputs),
                              lambda m: complex_gemm.pointwise_complex_gemm(m.inputs, m.problem, {}).get("D"))


def _largest_k_view(problem: Problem) -> Problem:
    m, n, k = max(problems_of(problem), key=lambda mnk: mnk[2])
    return Problem(problem.problem_id, "complex_gemm", problem.buffers, {**problem.params, "M": m, "N": n, "K": k})


def reduction_length(problem: Problem) -> int:
    """Real products in one part of the longest problem: 2 K."""
    return 2 * max(k for _, _, k in problems_of(problem))


def range_grouped_complex(problem, buffer):
    return complex_gemm.range_complex(_largest_k_view(problem), buffer)


class GroupedComplexOpSpec(OpSpec):
    """complex_gemm's bound applied problem by problem, each with its own 2 K_i."""

    def bounds(self, inputs: dict, problem: Problem, reference: dict) -> dict:
        if self.tolerance(problem, problem.buffer("D").dtype) is not None:
            return super().bounds(inputs, problem, reference)
        single = next(spec for spec in complex_gemm.OPS if spec.name == "complex_gemm")
        return grouped.per_member(problem, members(problem, inputs), lambda m: single.bounds(
            m.inputs, m.problem, grouped.member_reference(m, reference))["D"])


def make_grouped_complex_problem(problem_id: str, problems: list, dtypes: dict, layouts: dict, transforms: tuple,
                                 alpha: float = 1.0, beta: float = 0.0, accumulator: str = "float32") -> Problem:
    """A grouped_complex_gemm Problem (planar storage). ``dtypes``: A, B, D (and C when
    beta != 0), the parts' dtypes; ``layouts``: a, b, c (row/col); ``transforms``: (op(A),
    op(B)), each "none" or "conj"."""
    problems = [tuple(int(v) for v in mnk) for mnk in problems]
    if any(min(mnk) < 1 for mnk in problems):
        raise SpecError(f"{OP} {problem_id}: every M, N, K must be >= 1, got {problems}")
    ld = shared_leading_dimensions(problems, layouts, problem_id)
    params = {"problems": [list(mnk) for mnk in problems], "layout_a": layouts["a"], "layout_b": layouts["b"],
              "layout_c": layouts["c"], "alpha": alpha, "beta": beta, "accumulator": accumulator,
              "math_input": "", "complex": {"transform_a": transforms[0], "transform_b": transforms[1],
                                            "gaussian": False, "planar": True},
              "ld": ld, "offsets": offsets_for(problems)}
    operands = ["A", "B"] + (["C"] if beta != 0 else []) + ["D"]
    buffers = []
    for operand in operands:
        size = DTYPES[dtypes[operand]][0]
        for i, (m, n, k) in enumerate(problems):
            plane = operand_dims(operand, m, n, k)[0] * operand_dims(operand, m, n, k)[1]
            for start in (params["offsets"][operand][i], params["offsets"][operand][i] + plane):
                if start * size % START_ALIGN:
                    raise SpecError(f"{OP} {problem_id}: problem {i}'s {operand} plane starts {start * size} bytes "
                                    f"in, not {START_ALIGN}-byte aligned; pick extents that are multiples of "
                                    f"{START_ALIGN // size}")
        buffers.append(Buffer(operand, dtypes[operand], (params["offsets"][operand][-1],),
                              "out" if operand == "D" else "in"))
    for name, column in zip(SIZE_TABLES, range(3)):
        buffers.append(values_table(name, "int32", [mnk[column] for mnk in problems]))
    for operand in OPERANDS:
        target = operand if operand in operands else "D"
        size = DTYPES[dtypes[target]][0]
        starts = params["offsets"][target][:-1]
        planes = [operand_dims(target, *mnk)[0] * operand_dims(target, *mnk)[1] for mnk in problems]
        buffers.append(address_table(f"ptr_{operand}_real", [(target, s * size) for s in starts]))
        buffers.append(address_table(f"ptr_{operand}_imag", [(target, (s + q) * size) for s, q in zip(starts, planes)]))
    return Problem(problem_id, OP, buffers, params)


OPS = [
    GroupedComplexOpSpec(
        OP, ref_grouped_complex, reduction_length,
        "D_i = alpha op(A_i)@op(B_i) + beta C_i over complex numbers for each of params.problems, each operand's "
        "real and imaginary planes concatenated",
        scale_grouped_complex, range_grouped_complex,
        "per problem, as complex_gemm: per part |alpha| (|ar|@|br| + |ai|@|bi|) (re), |alpha| (|ar|@|bi| + "
        "|ai|@|br|) (im) + |beta| |C part|, n = 2 K_i",
        pointwise_scale=pointwise_grouped_complex,
        pointwise_text="e S_i, as complex_gemm", sizes="grouped"),
]
