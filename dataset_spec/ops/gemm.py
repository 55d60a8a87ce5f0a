"""Matrix products: gemm (layouts, alpha/beta epilogue, integer operands) and batch_matmul."""
from __future__ import annotations

import math

import numpy as np

from ..fp8 import is_fp8
from ..model import DTYPES, Problem, SpecError, dtype_kind
from ..packed import element_range, is_packed
from ..numerics import FORMATS, fp8_alignment_magnitudes
from .spec import (OpSpec, _fmt, _inputs_of, _out_dtype, _out_name, is_float_dtype, on_magnitudes,
                   range_int_products, range_products)


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
    their rounding). Array methods only, so torch tensors work too (verify/reference.py);
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


def stress_gemm(problem, buffer, context, previous):
    """A's rows and B's columns along K (in their stored layouts); C keeps its init. A
    problem with ``params.finite_operands`` (3xTF32: each float32 operand is split into
    tf32 big + small = tf32(x - big), and inf - inf is NaN) gets no infinity in B."""
    from .. import stress as st
    p = problem.params
    if buffer.name == "A":
        axis = -1 if p.get("layout_a", "row") == "row" else 0
        patterns = st.GEMM_A if is_float_dtype(buffer.dtype) else st.PRODUCTS
        return st.row_stress(patterns, buffer.shape, context, axis)
    if buffer.name == "B":
        axis = 0 if p.get("layout_b", "row") == "row" else -1
        return st.row_stress(st.PRODUCTS if p.get("finite_operands") else st.GEMM_B, buffer.shape, context, axis)
    return st.row_stress((st.p_normal,), buffer.shape, context)


def stress_batch_matmul(problem, buffer, context, previous):
    from .. import stress as st
    if buffer.name == "A":
        return st.row_stress(st.GEMM_A, buffer.shape, context, -1)
    return st.row_stress(st.GEMM_B, buffer.shape, context, -2)


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
           "e S_i, e the epilogue's float32 roundings of one term (alpha, beta, their products, the add)"),
    OpSpec("batch_matmul", ref_batch_matmul, batch_matmul_length, "C[b] = A[b] @ B[b]", scale_batch_matmul,
           range_products(batch_matmul_length), "|A[b]| @ |B[b]|, n = K",
           range_int_products(batch_matmul_length, "A", "B"),
           stress=stress_batch_matmul),
]
