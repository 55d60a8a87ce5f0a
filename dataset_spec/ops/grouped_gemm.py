"""grouped_gemm: G independent GEMMs D_i = alpha A_i @ B_i + beta C_i, each with its own M, N, K.

Buffers: one concatenated buffer per operand (A holds A_0, A_1, ... back to back, each in
its stored layout, ``params.offsets[operand][i]`` elements in), so comparison, poisoning
and the unwritten-output check see ordinary buffers. ``params.problems`` lists [M, N, K]
per problem. Grouped kernels read device tables the problem also carries
(dataset_spec/device_tables.py): ``problem_sizes`` (int32 [G, 3]: M, N, K), ``ptr_A``,
``ptr_B``, ``ptr_C``, ``ptr_D`` (u64 addresses of each problem's operand; ``ptr_C`` names
D's when there is no C, since kernels read the array even when beta = 0) and ``ld_A``,
``ld_B``, ``ld_C``, ``ld_D`` (int64 leading dimensions in elements: the stride of the
operand's non-contiguous mode, as CUTLASS 2.x ``lda`` and 3.x packed strides both hold).

The reference and the bound are the GEMM's, problem by problem: each D_i is judged with
its own K_i (``GroupedOpSpec.bounds``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..device_tables import address_table, values_table
from ..model import DTYPES, Buffer, Problem, SpecError
from . import gemm
from .spec import OpSpec, range_int_products

OPERANDS = ("A", "B", "C", "D")
TABLE_NAMES = ("problem_sizes", "ptr_A", "ptr_B", "ptr_C", "ptr_D", "ld_A", "ld_B", "ld_C", "ld_D")
# the byte alignment every problem's operand must start at (128-bit vector loads, TMA)
START_ALIGN = 16


def operand_dims(operand: str, m: int, n: int, k: int) -> tuple:
    """(rows, cols) of the operand's logical matrix."""
    return {"A": (m, k), "B": (k, n), "C": (m, n), "D": (m, n)}[operand]


def operand_layout(params: dict, operand: str) -> str:
    return params.get({"A": "layout_a", "B": "layout_b"}.get(operand, "layout_c"), "row")



def storage_shape(layout: str, rows: int, cols: int) -> tuple:
    return (rows, cols) if layout == "row" else (cols, rows)


def leading_dimension(layout: str, rows: int, cols: int) -> int:
    return cols if layout == "row" else rows


def problems_of(problem: Problem, op: str = "grouped_gemm") -> list:
    items = problem.params.get("problems")
    if not isinstance(items, list) or not items:
        raise SpecError(f"problem {problem.problem_id}: {op} needs params.problems, a list of [M, N, K]")
    return [tuple(int(v) for v in item) for item in items]


def concat_offsets(problems: list, operands, elements) -> dict:
    """Element offset of each problem's operand in its concatenated buffer, plus the total;
    ``elements(operand, m, n, k)``: how many elements one problem's operand holds."""
    out = {}
    for operand in operands:
        at, starts = 0, []
        for m, n, k in problems:
            starts.append(at)
            at += elements(operand, m, n, k)
        out[operand] = starts + [at]
    return out


def offsets_for(problems: list, layouts: dict) -> dict:
    return concat_offsets(problems, OPERANDS, lambda operand, m, n, k: int(np.prod(operand_dims(operand, m, n, k))))


@dataclass
class Member:
    """One problem of a grouped group as its per-problem op: its Problem, inputs and D's slice."""
    problem: Problem
    inputs: dict
    start: int
    stop: int


def split_members(problem: Problem, inputs: dict, operands, op: str, shape_of,
                  dropped=("problems", "offsets")) -> list:
    """The group's problems as ``op`` problems over slices of the concatenated buffers;
    ``shape_of(operand, m, n, k)``: one problem's storage shape of that operand."""
    p = problem.params
    offsets = p["offsets"]
    params = {key: value for key, value in p.items() if key not in dropped}
    result = []
    for i, (m, n, k) in enumerate(problems_of(problem, problem.op)):
        buffers, sliced = [], {}
        for operand in operands:
            if operand not in inputs and operand != "D":
                continue
            buffers.append(Buffer(operand, problem.buffer(operand).dtype, shape_of(operand, m, n, k),
                                  "out" if operand == "D" else "in"))
            if operand in inputs:
                flat = np.asarray(inputs[operand]).reshape(-1)
                sliced[operand] = flat[offsets[operand][i]:offsets[operand][i + 1]]
        sub = Problem(f"{problem.problem_id}#{i}", op, buffers, {**params, "M": m, "N": n, "K": k})
        result.append(Member(sub, sliced, offsets["D"][i], offsets["D"][i + 1]))
    return result


def members(problem: Problem, inputs: dict) -> list:
    """The group's problems as gemm problems over slices of the concatenated buffers."""
    p = problem.params
    return split_members(problem, inputs, OPERANDS, "gemm",
                         lambda operand, m, n, k: storage_shape(operand_layout(p, operand), *operand_dims(operand, m, n, k)))


def concat_outputs(problem: Problem, parts: list) -> dict:
    """D of the whole group from (Member, values) parts, in float64."""
    total = problem.params["offsets"]["D"][-1]
    out = np.empty(total, dtype=np.float64)
    for member, values in parts:
        out[member.start:member.stop] = np.asarray(values, dtype=np.float64).reshape(-1)
    return {"D": out.reshape(problem.buffer("D").shape)}


def per_member(problem: Problem, parts: list, of_member) -> dict:
    """D of the whole group from ``of_member(member)``, one problem's D as its single-problem
    op computes it (None: zeros, a term that op leaves out)."""
    values = [(m, of_member(m)) for m in parts]
    return concat_outputs(problem, [(m, np.zeros(m.stop - m.start) if v is None else v) for m, v in values])


def member_reference(member, reference: dict) -> dict:
    """The member's slice of the group's reference D, in its own D's shape."""
    flat = np.asarray(reference["D"], dtype=np.float64).reshape(-1)
    return {"D": flat[member.start:member.stop].reshape(member.problem.buffer("D").shape)}


def ref_grouped_gemm(inputs, problem):
    """D_i = alpha A_i @ B_i + beta C_i per problem, each as the gemm reference computes it."""
    return per_member(problem, members(problem, inputs), lambda m: gemm.ref_gemm(m.inputs, m.problem)["D"])


def scale_grouped_gemm(inputs, problem):
    return per_member(problem, members(problem, inputs), lambda m: gemm.scale_gemm(m.inputs, m.problem)["D"])


def pointwise_grouped_gemm(inputs, problem, reference):
    return per_member(problem, members(problem, inputs), lambda m: gemm.pointwise_gemm(
        m.inputs, m.problem, {"D": reference["D"].reshape(-1)[m.start:m.stop]}).get("D"))


def max_k(problem: Problem) -> int:
    return max(k for _, _, k in problems_of(problem))


def range_grouped_gemm(problem, buffer):
    """The gemm domain at the largest K (every problem's products must fit)."""
    p = problem.params
    m, n, k = max(problems_of(problem), key=lambda mnk: mnk[2])
    view = Problem(problem.problem_id, "gemm", problem.buffers, {**p, "K": k})
    return gemm.range_gemm(view, buffer)


def stress_grouped_gemm(problem, buffer, context, previous):
    """Each problem's A rows and B columns along its own K, as for gemm."""
    from .. import stress as st
    if buffer.name not in ("A", "B"):
        return st.row_stress((st.p_normal,), buffer.shape, context)
    p = problem.params
    out = np.empty(buffer.numel)
    offsets = p["offsets"][buffer.name]
    for i, (m, n, k) in enumerate(problems_of(problem)):
        rows, cols = operand_dims(buffer.name, m, n, k)
        shape = storage_shape(operand_layout(p, buffer.name), rows, cols)
        view = Buffer(buffer.name, buffer.dtype, shape, "in", buffer.init)
        out[offsets[i]:offsets[i + 1]] = np.asarray(
            gemm.stress_gemm(problem, view, context, previous)).reshape(-1)
    return out.reshape(buffer.shape)


class GroupedOpSpec(OpSpec):
    """The gemm bound applied problem by problem, each with its own reduction length."""

    def bounds(self, inputs: dict, problem: Problem, reference: dict) -> dict:
        if self.tolerance(problem, problem.buffer("D").dtype) is not None:
            return super().bounds(inputs, problem, reference)
        gemm_op = next(spec for spec in gemm.OPS if spec.name == "gemm")
        return per_member(problem, members(problem, inputs), lambda m: gemm_op.bounds(
            m.inputs, m.problem, member_reference(m, reference))["D"])


def make_grouped_problem(problem_id: str, problems: list, dtypes: dict, layouts: dict,
                         alpha: float = 1.0, beta: float = 0.0, inits: dict = None,
                         extra_params: dict = None) -> Problem:
    """A grouped_gemm Problem: concatenated A, B, (C,) D and the device tables.

    ``dtypes``/``inits``: per operand name (A, B, C, D); ``layouts``: {"a", "b", "c"} as
    "row"/"col". C exists only when beta != 0. Every problem's operands must start
    ``START_ALIGN``-byte aligned (choose contiguous extents accordingly)."""
    inits = inits or {}
    problems = [tuple(int(v) for v in mnk) for mnk in problems]
    if any(min(mnk) < 1 for mnk in problems):
        raise SpecError(f"grouped_gemm {problem_id}: every M, N, K must be >= 1, got {problems}")
    params = {"problems": [list(mnk) for mnk in problems], "layout_a": layouts["a"], "layout_b": layouts["b"],
              "layout_c": layouts["c"], "alpha": alpha, "beta": beta, **(extra_params or {})}
    params["offsets"] = offsets_for(problems, params)
    operands = ["A", "B"] + (["C"] if beta != 0 else []) + ["D"]
    buffers = []
    for operand in operands:
        size = DTYPES[dtypes[operand]][0]
        for start in params["offsets"][operand][:-1]:
            if start * size % START_ALIGN:
                raise SpecError(f"grouped_gemm {problem_id}: a problem's {operand} starts {start * size} bytes "
                                f"in, not {START_ALIGN}-byte aligned; pick extents that are multiples of "
                                f"{START_ALIGN // size}")
        buffers.append(Buffer(operand, dtypes[operand], (params["offsets"][operand][-1],),
                              "out" if operand == "D" else "in", inits.get(operand)))
    buffers.append(values_table("problem_sizes", "int32", [list(mnk) for mnk in problems]))
    for operand in OPERANDS:
        target = operand if operand in operands else "D"
        size = DTYPES[dtypes[target]][0]
        buffers.append(address_table(f"ptr_{operand}", [(target, start * size)
                                                         for start in params["offsets"][target][:-1]]))
    for operand in OPERANDS:
        layout = operand_layout(params, operand)
        buffers.append(values_table(f"ld_{operand}", "int64",
                                    [leading_dimension(layout, *operand_dims(operand, *mnk)) for mnk in problems]))
    return Problem(problem_id, "grouped_gemm", buffers, params)


OPS = [
    GroupedOpSpec("grouped_gemm", ref_grouped_gemm, max_k,
                  "D_i = alpha A_i@B_i + beta C_i for each of params.problems, operands concatenated",
                  scale_grouped_gemm, range_grouped_gemm,
                  "per problem |alpha| |A_i| @ |B_i| + |beta| |C_i|, n = K_i",
                  range_int_products(max_k, "A", "B"), pointwise_grouped_gemm, stress_grouped_gemm,
                  "per problem, as gemm: e S_i, e the epilogue's float32 roundings of one term", sizes="grouped"),
]
