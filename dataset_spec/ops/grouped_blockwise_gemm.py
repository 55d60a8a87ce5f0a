"""grouped_blockwise_scaled_gemm: G blockwise-scaled FP8 GEMMs of different sizes in one launch
(an MoE layer's experts with DeepSeek-style 1x128 / 128x128 scales; CUTLASS's
``KernelPtrArrayTmaWarpSpecializedCooperativeFP8Blockwise`` mainloops).

    D_i = alpha * sum_kb (A_i[:, kb] @ B_i[kb, :]) * SFA_i[m // gm, kb] * SFB_i[n // gn, kb] + beta * C_i

Buffers: one concatenated buffer per operand, as grouped_gemm lays them out (A_0, A_1, ...
back to back, each in its stored layout, ``params.offsets[operand][i]`` elements in), and
likewise the float32 scales SFA (each problem's ceil(M_i/gm) x ceil(K_i/gk) blocks) and SFB
(ceil(N_i/gn) x ceil(K_i/gk)), stored as blockwise_scaled_gemm stores one problem's
(``layout_sfa``/``layout_sfb``: "col", M- or N-major). ``params``: ``problems`` [M, N, K] per
problem, ``layout_a/b/c``, ``layout_sfa/sfb``, ``scale_granularity_a`` [gm, gk],
``scale_granularity_b`` [gn, gk], alpha, beta.

Device tables (dataset_spec/device_tables.py): grouped_gemm's ``problem_sizes``, ``ptr_A`` ..
``ptr_D`` and ``ld_A`` .. ``ld_D``, plus ``ptr_SFA``/``ptr_SFB`` (u64 addresses of each
problem's first scale). No table of scale layouts: CUTLASS's SM90 ptr-array blockwise
mainloop rebuilds each problem's layout from its problem shape
(``ScaleConfig::tile_atom_to_shape_SFA/SFB`` in ``load_init``) and never reads the
``layout_SFA``/``layout_SFB`` arrays its Arguments name.

The reference and the bound are blockwise_scaled_gemm's, problem by problem: each D_i is
judged with its own K_i and K_i/gk promotions (docs/verification.md,
"grouped_blockwise_scaled_gemm").
"""
from __future__ import annotations

import numpy as np

from ..device_tables import address_table, values_table
from ..model import DTYPES, Buffer, Problem, SpecError
from . import blockwise_gemm as bw
from . import grouped_gemm as grouped
from .grouped_gemm import START_ALIGN, leading_dimension, storage_shape
from .grouped_gemm import TABLE_NAMES as GROUPED_TABLES

OP = "grouped_blockwise_scaled_gemm"
OPERANDS = ("A", "B", "C", "D", "SFA", "SFB")
SCALE_TABLES = ("ptr_SFA", "ptr_SFB")
TABLE_NAMES = GROUPED_TABLES + SCALE_TABLES
SCALE_ALIGN = 4   # a problem's scales start float-aligned: the mainloop loads them with 4-byte cp.async


def _granularities(params: dict) -> tuple:
    gm, gk = (int(v) for v in params["scale_granularity_a"])
    gn, _ = (int(v) for v in params["scale_granularity_b"])
    return gm, gn, gk


def _dims(operand: str, m: int, n: int, k: int, params: dict) -> tuple:
    """(rows, cols) of the operand's logical matrix; scales as (blocks, K blocks)."""
    gm, gn, gk = _granularities(params)
    return {"A": (m, k), "B": (k, n), "C": (m, n), "D": (m, n),
            "SFA": (-(-m // gm), -(-k // gk)), "SFB": (-(-n // gn), -(-k // gk))}[operand]


def _layout(params: dict, operand: str) -> str:
    return params.get({"A": "layout_a", "B": "layout_b", "SFA": "layout_sfa", "SFB": "layout_sfb"}
                      .get(operand, "layout_c"), "row")


def problems_of(problem: Problem) -> list:
    return grouped.problems_of(problem, OP)


def offsets_for(problems: list, params: dict) -> dict:
    """Element offset of each problem's operand (and scales) in its concatenated buffer, plus the total."""
    return grouped.concat_offsets(problems, OPERANDS,
                                  lambda operand, m, n, k: int(np.prod(_dims(operand, m, n, k, params))))


def members(problem: Problem, inputs: dict) -> list:
    """The group's problems as blockwise_scaled_gemm problems over slices of the buffers."""
    p = problem.params
    return grouped.split_members(
        problem, inputs, ("A", "B", "SFA", "SFB", "C", "D"), bw.OP,
        lambda operand, m, n, k: storage_shape(_layout(p, operand), *_dims(operand, m, n, k, p)))


def ref_grouped_blockwise(inputs, problem):
    """Each D_i as blockwise_scaled_gemm's float64 reference computes it."""
    return grouped.per_member(problem, members(problem, inputs), lambda m: bw.ref_blockwise(m.inputs, m.problem)["D"])


def scale_grouped_blockwise(inputs, problem):
    return grouped.per_member(problem, members(problem, inputs), lambda m: bw.scale_blockwise(m.inputs, m.problem)["D"])


def pointwise_grouped_blockwise(inputs, problem, reference):
    return grouped.per_member(problem, members(problem, inputs),
                              lambda m: bw.pointwise_blockwise(m.inputs, m.problem, {}).get("D"))


def max_k(problem: Problem) -> int:
    return max(k for _, _, k in problems_of(problem))


def _largest_k_view(problem: Problem) -> Problem:
    """The group as one blockwise problem at its largest K: the tightest input domain (every
    problem's products must stay finite) and the loosest single bound description."""
    m, n, k = max(problems_of(problem), key=lambda mnk: mnk[2])
    return Problem(problem.problem_id, bw.OP, problem.buffers, {**problem.params, "M": m, "N": n, "K": k})


def range_grouped_blockwise(problem, buffer):
    return bw.range_blockwise(_largest_k_view(problem), buffer)


def stress_grouped_blockwise(problem, buffer, context, previous):
    """Each problem's slice as blockwise_scaled_gemm stresses one problem (rows of A and B
    along its own K, scale patterns along its own K blocks)."""
    from .. import stress as st
    p = problem.params
    if buffer.name not in ("A", "B", "SFA", "SFB"):
        return st.row_stress((st.p_normal,), buffer.shape, context)
    out = np.empty(buffer.numel)
    offsets = p["offsets"][buffer.name]
    for i, (m, n, k) in enumerate(problems_of(problem)):
        rows, cols = _dims(buffer.name, m, n, k, p)
        view = Buffer(buffer.name, buffer.dtype, storage_shape(_layout(p, buffer.name), rows, cols), "in",
                      buffer.init)
        single = Problem(problem.problem_id, bw.OP, problem.buffers, {**p, "M": m, "N": n, "K": k})
        out[offsets[i]:offsets[i + 1]] = np.asarray(
            bw.stress_blockwise(single, view, context, previous)).reshape(-1)
    return out.reshape(buffer.shape)


class GroupedBlockwiseOpSpec(bw.BlockwiseOpSpec):
    """The blockwise bound applied problem by problem, each with its own K and K blocks."""

    def bound_terms(self, problem: Problem, dtype: str, name=None):
        return super().bound_terms(_largest_k_view(problem), dtype, name)

    def bounds(self, inputs: dict, problem: Problem, reference: dict) -> dict:
        if self.tolerance(problem, problem.buffer("D").dtype) is not None:
            return super().bounds(inputs, problem, reference)
        single = bw.OPS[0]
        return grouped.per_member(problem, members(problem, inputs), lambda m: single.bounds(
            m.inputs, m.problem, grouped.member_reference(m, reference))["D"])


def make_grouped_blockwise_problem(problem_id: str, problems: list, dtypes: dict, granularity_a: tuple,
                                   granularity_b: tuple, layouts: dict, alpha: float = 1.0,
                                   beta: float = 0.0) -> Problem:
    """A grouped_blockwise_scaled_gemm Problem: concatenated A, B, SFA, SFB, (C,) D and the
    device tables. ``dtypes``: A, B, D (and C when beta != 0); ``layouts``: a, b, c (row/col)
    and sfa, sfb ("col": M-/N-major, the SM90 kernels' only layout). Every problem's
    operands must start ``START_ALIGN``-byte aligned (choose extents accordingly)."""
    problems = [tuple(int(v) for v in mnk) for mnk in problems]
    if any(min(mnk) < 1 for mnk in problems):
        raise SpecError(f"{OP} {problem_id}: every M, N, K must be >= 1, got {problems}")
    if layouts["sfa"] != "col" or layouts["sfb"] != "col":
        raise SpecError(f"{OP} {problem_id}: scale layouts must be 'col' (M-/N-major, what the SM90 kernels "
                        f"read), got sfa={layouts['sfa']!r} sfb={layouts['sfb']!r}")
    gm, gk = (int(v) for v in granularity_a)
    gn, gkb = (int(v) for v in granularity_b)
    if gk != gkb or min(gm, gn, gk) < 1:
        raise SpecError(f"{OP} {problem_id}: scale granularities {[gm, gk]} (A) and {[gn, gkb]} (B) must be "
                        f"positive and share one K granularity")
    params = {"problems": [list(mnk) for mnk in problems], "layout_a": layouts["a"], "layout_b": layouts["b"],
              "layout_c": layouts["c"], "layout_sfa": layouts["sfa"], "layout_sfb": layouts["sfb"],
              "scale_granularity_a": [gm, gk], "scale_granularity_b": [gn, gkb],
              "alpha": alpha, "beta": beta, "accumulator": bw.TENSOR_CORE}
    params["offsets"] = offsets_for(problems, params)
    inits = bw.default_inits(max(k for _, _, k in problems))
    dtypes = dict(dtypes, SFA="float32", SFB="float32")
    operands = ["A", "B", "SFA", "SFB"] + (["C"] if beta != 0 else []) + ["D"]
    buffers = []
    for operand in operands:
        size = DTYPES[dtypes[operand]][0]
        align = SCALE_ALIGN if operand in ("SFA", "SFB") else START_ALIGN
        for start in params["offsets"][operand][:-1]:
            if start * size % align:
                raise SpecError(f"{OP} {problem_id}: a problem's {operand} starts {start * size} bytes in, not "
                                f"{align}-byte aligned; pick extents that are multiples of {align // size}")
        buffers.append(Buffer(operand, dtypes[operand], (params["offsets"][operand][-1],),
                              "out" if operand == "D" else "in", inits.get(operand)))
    buffers.append(values_table("problem_sizes", "int32", [list(mnk) for mnk in problems]))
    for operand in ("A", "B", "C", "D", "SFA", "SFB"):
        target = operand if operand in operands else "D"
        size = DTYPES[dtypes[target]][0]
        buffers.append(address_table(f"ptr_{operand}", [(target, start * size)
                                                         for start in params["offsets"][target][:-1]]))
    for operand in ("A", "B", "C", "D"):
        layout = _layout(params, operand)
        buffers.append(values_table(f"ld_{operand}", "int64",
                                    [leading_dimension(layout, *_dims(operand, *mnk, params)[:2])
                                     for mnk in problems]))
    return Problem(problem_id, OP, buffers, params)


OPS = [
    GroupedBlockwiseOpSpec(
        OP, ref_grouped_blockwise, max_k,
        "D_i = alpha sum_kb (A_i,kb @ B_i,kb) SFA_i SFB_i + beta C_i for each of params.problems, "
        "operands and scales concatenated",
        scale_grouped_blockwise, range_grouped_blockwise,
        "per problem |alpha| |A_s,i| @ |B_s,i| + |beta| |C_i|, n = gk on the tensor cores, then K_i/gk "
        "float32 promotions", None, pointwise_grouped_blockwise, stress_grouped_blockwise,
        "per problem, as blockwise_scaled_gemm: e S_i, e the epilogue's float32 roundings of one term",
        sizes="grouped"),
]
