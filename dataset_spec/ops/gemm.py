"""Matrix products: gemm (layouts, alpha/beta epilogue, integer operands) and batch_matmul."""
from __future__ import annotations

import math

import numpy as np

from ..fp8 import is_fp8
from ..model import DTYPES, Problem, SpecError, dtype_kind
from ..packed import element_range, is_packed
from ..numerics import FORMATS, fp8_alignment_magnitudes
from .items import top_binade_floor
from typing import Optional

from .spec import (OpSpec, _fmt, _inputs_of, _out_dtype, _out_name, is_float_dtype, on_magnitudes,
                   outputs_hold_specials, range_int_products, range_products, reads_buffer)


def _logical(array: np.ndarray, layout: str) -> np.ndarray:
    """Buffers hold storage order (row-major arrays); "col" stores the transpose."""
    if layout not in ("row", "col"):
        raise SpecError(f"gemm layout must be 'row' or 'col', got {layout!r}")
    return array if layout == "row" else array.T


def ref_gemm(inputs, problem):
    """D = alpha * A @ B + beta * C, each operand in its recorded layout, then stored the
    way the epilogue converts to D's dtype (``saturate_to_output``)."""
    out = _out_name(problem)
    exact = gemm_exact(inputs, problem)
    return {out: saturate_to_output(exact[out], problem.buffer(out).dtype)}


def saturate_to_output(values: np.ndarray, dtype: str) -> np.ndarray:
    """The epilogue's conversion where it is not a plain rounding: integers round to
    nearest even and saturate (``cvt.rni.sat``; CUTLASS's LinearCombinationClamp and
    integer NumericConverters), FP8 saturates to its largest finite value
    (``cvt.rn.satfinite``). Other float outputs keep the exact value (the bound covers
    their rounding). Array methods only, so torch tensors work too (verify/trials/reference.py);
    ``round`` is half to even in numpy and torch, and ``clip`` keeps NaN."""
    kind = dtype_kind(dtype)
    if is_packed(dtype):
        lo, hi = element_range(dtype)
        return values.round().clip(lo, hi - 1)
    if kind in ("i", "u"):
        bits = 8 * DTYPES[dtype][0]
        lo, hi = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if kind == "i" else (0, 2 ** bits - 1)
        return values.round().clip(lo, hi)
    if is_fp8(dtype):
        top = FORMATS[dtype].max_finite
        return values.clip(-top, top)
    return values


def gemm_exact(inputs, problem):
    """alpha * A @ B + beta * C in float64, before any conversion to D's dtype."""
    p = problem.params
    a, b = _inputs_of(problem, inputs, "A", "B")
    a = _logical(a.reshape(problem.buffer("A").shape), p.get("layout_a", "row"))
    b = _logical(b.reshape(problem.buffer("B").shape), p.get("layout_b", "row"))
    d = float(p.get("alpha", 1.0)) * (a @ b)
    beta = float(p.get("beta", 0.0))
    out = _out_name(problem)
    layout_c = p.get("layout_c", "row")
    if beta != 0.0:
        c_name = "C" if "C" in inputs else out
        c = _logical(inputs[c_name].reshape(problem.buffer(c_name).shape), layout_c)
        d = d + beta * c
    return {out: _logical(d, layout_c)}


def gemm_reduction_length(problem: Problem) -> int:
    p = problem.params
    if "K" in p:
        return int(p["K"])
    shape = problem.buffer("A").shape
    return int(shape[1] if p.get("layout_a", "row") == "row" else shape[0])


def gemm_epilogue_roundings(problem: Problem) -> int:
    """float32 roundings of the epilogue on one term: alpha's and beta's own rounding to
    float32, the products alpha * acc and beta * C, and the add; 0 for D = A @ B."""
    p = problem.params
    alpha, beta = float(p.get("alpha", 1.0)), float(p.get("beta", 0.0))
    def own(value):  # 1 when the float32 parameter is not the exact value
        return int(float(np.float32(value)) != value)
    alpha_term = own(alpha) + int(alpha != 1.0)
    beta_term = own(beta) + int(beta not in (0.0, 1.0))
    return max(alpha_term, beta_term) + int(beta != 0.0)


def pointwise_gemm(inputs, problem, reference):
    count = gemm_epilogue_roundings(problem)
    if count == 0:
        return {}
    return {k: count * v for k, v in scale_gemm(inputs, problem).items()}


def operand_magnitudes(problem: Problem, inputs: dict, operands=("A", "B")) -> dict:
    """|inputs| (numpy arrays or torch tensors), the FP8 ``operands`` of a problem that sums
    on FP8 tensor cores (``accumulator: fp8_tensor_core``) weighed as its adder aligns them
    (numerics.fp8_alignment_magnitudes): the magnitude scale S of the error bound."""
    fp8_sum = problem.params.get("accumulator") == "fp8_tensor_core"
    return {name: fp8_alignment_magnitudes(v, problem.buffer(name).dtype)
            if fp8_sum and name in operands and is_fp8(problem.buffer(name).dtype) else abs(v)
            for name, v in inputs.items()}


def scale_gemm(inputs, problem):
    p = problem.params
    abs_inputs = operand_magnitudes(problem, inputs)
    abs_problem = Problem(problem.problem_id, problem.op, problem.buffers,
                          {**p, "alpha": abs(float(p.get("alpha", 1.0))), "beta": abs(float(p.get("beta", 0.0)))})
    return gemm_exact(abs_inputs, abs_problem)


def range_gemm(problem, buffer):
    """A, B: products must neither overflow K-fold in the accumulator and output nor
    underflow the accumulator; C: beta * C must fit the output."""
    p = problem.params
    out, acc = _fmt(_out_dtype(problem)), _fmt(str(p.get("accumulator") or "float32"))
    k = gemm_reduction_length(problem)
    if buffer.name == "C":
        return _fmt(buffer.dtype).tiny, out.max_finite / (4 * max(1.0, abs(float(p.get("beta", 1.0)))))
    limit = min(out.max_finite, acc.max_finite) / (4 * k * max(1.0, abs(float(p.get("alpha", 1.0)))))
    lo, hi = max(_fmt(buffer.dtype).tiny, math.sqrt(acc.tiny)), math.sqrt(limit)
    other = problem.buffer("B" if buffer.name == "A" else "A")
    if not is_float_dtype(other.dtype):
        # an integer operand times a float one (mixed-input upcast, 3.x ConvertOnly) keeps
        # its dtype's whole range (integer_range): the float operand takes the rest of the
        # budget, so K |int| |float| stays within the limit (an f16 accumulator or output
        # would overflow to inf where the reference stays finite)
        low, high = element_range(other.dtype) if is_packed(other.dtype) else _int_range(other.dtype)
        hi = limit / max(1, abs(low), abs(high - 1))
        lo = min(lo, hi)
    narrow = FORMATS.get(str(p.get("math_input") or ""))
    if narrow is not None:  # operands rounded to float16/bfloat16 before the multiply
        lo, hi = max(lo, narrow.tiny), min(hi, math.sqrt(narrow.max_finite) / 2)
    return lo, hi


def _int_range(dtype: str) -> tuple:
    """[low, high) of a byte-or-wider integer dtype."""
    bits = 8 * DTYPES[dtype][0]
    return (-(2 ** (bits - 1)), 2 ** (bits - 1)) if dtype_kind(dtype) == "i" else (0, 2 ** bits)


def a_k_axis(problem: Problem) -> int:
    """A's K axis in storage: -1 for a row-major A (M x K), 0 for a column-major one."""
    return -1 if problem.params.get("layout_a", "row") == "row" else 0


def b_k_axis(problem: Problem) -> int:
    """B's K axis in storage: 0 for a row-major B (K x N), -1 for a column-major one."""
    return 0 if problem.params.get("layout_b", "row") == "row" else -1


def gemm_reduction_axis(problem: Problem, buffer) -> Optional[int]:
    return {"A": a_k_axis(problem), "B": b_k_axis(problem)}.get(buffer.name)


def stress_gemm(problem, buffer, context, previous):
    """A's rows and B's columns along K (in their stored layouts), each with one K index
    all zero (a zero column of A, a zero row of B); C keeps its init, or when beta = 0 is
    NaN and infinities throughout (C is not read then). A problem with
    ``params.finite_operands`` (3xTF32: each float32 operand is split into tf32 big +
    small = tf32(x - big), and inf - inf is NaN) gets no infinity in B; an integer output
    no NaN or infinity at all (OpSpec.stress_values). An FP8 e4m3 output gets rows that
    meet at its top binade (``top_output_rows``)."""
    from .. import stress as st
    p = problem.params
    if buffer.name in ("A", "B"):
        axis = a_k_axis(problem) if buffer.name == "A" else b_k_axis(problem)
        if buffer.name == "A":
            patterns = st.GEMM_A if is_float_dtype(buffer.dtype) else st.PRODUCTS
        else:
            patterns = st.GEMM_B_FINITE if p.get("finite_operands") else st.GEMM_B
        values = top_output_rows(problem, buffer, st.row_stress(patterns, buffer.shape, context, axis), axis)
        values = top_input_entries(problem, buffer, values, axis)
        return st.zero_slice(values, axis, st.k_slice(buffer.shape[axis], buffer.name))
    if buffer.name == "C" and not reads_buffer(problem, "C"):
        return st.nonfinite_fill(buffer.shape)
    return st.row_stress((st.p_normal,), buffer.shape, context)


TOP_OUTPUT_ROWS = 3  # rows of A and columns of B (from the last) that meet at an FP8 output's top


def top_output_rows(problem: Problem, buffer, values: np.ndarray, axis: int) -> np.ndarray:
    """For an FP8 e4m3 output (saturating, cvt.rn.satfinite): the last TOP_OUTPUT_ROWS rows
    of A and columns of B along K hold one value t, with K alpha t^2 = 3/2 of the output's
    top binade, so their products land inside it (256..448). The domain keeps K |a| |b|
    a quarter below the output's top; these rows go past it on purpose, which the
    saturating conversion allows. Other outputs: ``values`` unchanged."""
    out = problem.buffer(_out_name(problem)).dtype
    if out != "float8_e4m3" or not is_float_dtype(buffer.dtype):
        return values
    k = gemm_reduction_length(problem)
    alpha = abs(float(problem.params.get("alpha", 1.0))) or 1.0
    top = 2.0 ** math.floor(math.log2(FORMATS[out].max_finite))
    t = math.sqrt(1.5 * top / (k * alpha))
    t = min(t, FORMATS[buffer.dtype].max_finite)
    moved = np.moveaxis(np.array(values, dtype=np.float64), axis, -1)
    rows = moved.reshape(-1, moved.shape[-1])
    if rows.shape[0] > 2 * TOP_OUTPUT_ROWS:
        rows[-TOP_OUTPUT_ROWS:] = t
    return np.moveaxis(rows.reshape(moved.shape), -1, axis)


TOP_INPUT_ROWS = 4  # rows of A (columns of B) from the first that hold an FP8 operand's top binade


def fp8_top_input_k(k: int) -> tuple:
    """(k of A's top-binade column, k of B's top-binade row) for reduction length ``k``:
    two K indices away from the zeroed K slices (stress.k_slice: K/2 and K/2 + 1)."""
    return k // 4, k // 4 + 1


def top_input_entries(problem: Problem, buffer, values: np.ndarray, axis: int) -> np.ndarray:
    """For FP8 operands, whose domain stops far below the format's top binade (K products
    must stay inside the output): the first TOP_INPUT_ROWS rows of A hold top-binade values
    (cycling through its 8 mantissas) at one K index, where B's whole row holds the
    format's smallest normal, and B's first columns likewise at a second K index against a
    smallest-normal column of A. Each such product is the top value over 2^(bias - 1)
    (e4m3: at most 7), so the sums stay where the rest of the row puts them, and a kernel
    that decodes the top exponent wrongly (as IEEE's inf/NaN, or clamped) fails. A GEMM
    with fewer than 2 K indices, or other dtypes: ``values`` unchanged."""
    dtype = buffer.dtype
    if not str(dtype).startswith("float8") or np.ndim(values) < 2 or np.shape(values)[axis] < 4:
        return values
    fmt = FORMATS[dtype]
    top_floor = top_binade_floor(dtype)
    tops = np.linspace(top_floor, fmt.max_finite, 8)
    small = fmt.tiny
    own_k, other_k = fp8_top_input_k(np.shape(values)[axis])
    if buffer.name == "B":
        own_k, other_k = other_k, own_k
    moved = np.moveaxis(np.array(values, dtype=np.float64), axis, -1)
    rows = moved.reshape(-1, moved.shape[-1])
    count = min(TOP_INPUT_ROWS, max(0, rows.shape[0] - 2 * TOP_OUTPUT_ROWS))
    # the stress trial's all-zero rows of A (columns of B) stay all zero: they catch a kernel
    # that skips storing a zero row's outputs (coverage item zero_row)
    live = np.flatnonzero(np.any(rows != 0, axis=-1))
    rows[live, other_k] = small
    for i, r in enumerate(live[:count]):
        rows[r, own_k] = tops[i % tops.size] * (-1.0 if i % 2 else 1.0)
    return np.moveaxis(rows.reshape(moved.shape), -1, axis)


def coverage_gemm(problem: Problem) -> list:
    """Zero rows and columns of A and B, C's NaN and infinities when beta = 0, NaN in A
    and infinity in B where the output holds them, and D's subnormal, FP8-top and small
    integer results."""
    from .items import CoverageItem, output_items
    items = []
    for name, axis in (("A", a_k_axis(problem)), ("B", b_k_axis(problem))):
        if is_float_dtype(problem.buffer(name).dtype):
            items += [CoverageItem(name, "zero_row", axis), CoverageItem(name, "zero_slice", axis)]
    if outputs_hold_specials(problem):
        if is_float_dtype(problem.buffer("A").dtype):
            items.append(CoverageItem("A", "nan"))
        if holds_infinity(problem.buffer("B").dtype) and not problem.params.get("finite_operands"):
            items.append(CoverageItem("B", "inf"))
    if any(b.name == "C" and b.role == "in" for b in problem.buffers) and not reads_buffer(problem, "C"):
        items.append(CoverageItem("C", "nonfinite_all"))
    for name in ("A", "B"):
        operand = problem.buffer(name)
        if str(operand.dtype).startswith("float8") and len(operand.shape) >= 2 and gemm_reduction_length(problem) >= 4:
            items.append(CoverageItem(name, "top_binade"))
    items = list(dict.fromkeys(items))
    out = _out_name(problem)
    return items + output_items(problem, out, subnormal=is_float_dtype(problem.buffer("A").dtype),
                                saturating=_saturating(problem, out))


def holds_infinity(dtype: str) -> bool:
    """Float dtypes with an infinity (FP8 e4m3 has none: its stores of inf become NaN)."""
    return is_float_dtype(dtype) and dtype != "float8_e4m3"


def _saturating(problem: Problem, out: str) -> bool:
    """An integer output narrower than the int32 accumulator (it saturates)."""
    dtype = problem.buffer(out).dtype
    return not is_float_dtype(dtype) and (is_packed(dtype) or DTYPES[dtype][0] < 4)


def stress_batch_matmul(problem, buffer, context, previous):
    from .. import stress as st
    if buffer.name == "A":
        values = st.row_stress(st.GEMM_A, buffer.shape, context, -1)
        return st.zero_slice(values, -1, st.k_slice(buffer.shape[-1], "A"))
    values = st.row_stress(st.GEMM_B, buffer.shape, context, -2)
    return st.zero_slice(values, -2, st.k_slice(buffer.shape[-2], "B"))


def coverage_batch_matmul(problem: Problem) -> list:
    from .items import CoverageItem, output_items
    items = []
    if is_float_dtype(problem.buffer("A").dtype):
        items += [CoverageItem("A", "zero_row", -1), CoverageItem("B", "zero_row", -2), CoverageItem("A", "nan"),
                  CoverageItem("B", "inf")]
    return items + output_items(problem, _out_name(problem), subnormal=False)


def ref_batch_matmul(inputs, problem):
    """C[b] = A[b] @ B[b], row-major."""
    a, b = _inputs_of(problem, inputs, "A", "B")
    a = a.reshape(problem.buffer("A").shape)
    b = b.reshape(problem.buffer("B").shape)
    return {_out_name(problem): np.matmul(a, b)}


scale_batch_matmul = on_magnitudes(ref_batch_matmul)


def batch_matmul_length(problem: Problem) -> int:
    return int(problem.buffer("A").shape[-1])


OPS = [
    OpSpec("gemm", ref_gemm, gemm_reduction_length, "D = alpha A@B + beta C with layouts", scale_gemm,
           range_gemm, "|alpha| |A| @ |B| + |beta| |C|, n = K", range_int_products(gemm_reduction_length, "A", "B"),
           pointwise_gemm, stress_gemm,
           "e S_i, e the epilogue's float32 roundings of one term (alpha, beta, their products, the add)",
           coverage=coverage_gemm, reduction_axis=gemm_reduction_axis, exact=gemm_exact,
           sizes="gemm", array_api=True, device_stress=True, exact_flops=True),
    OpSpec("batch_matmul", ref_batch_matmul, batch_matmul_length, "C[b] = A[b] @ B[b]", scale_batch_matmul,
           range_products(batch_matmul_length), "|A[b]| @ |B[b]|, n = K",
           range_int_products(batch_matmul_length, "A", "B"),
           stress=stress_batch_matmul, coverage=coverage_batch_matmul,
           reduction_axis=lambda problem, buffer: {"A": -1, "B": -2}.get(buffer.name), exact_flops=True),
]
