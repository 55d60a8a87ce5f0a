"""Weight-only quantised GEMM (``mixed_input_gemm``): a narrow operand dequantised by group
scales (and zero points) along K, times a 16-bit operand, as CUTLASS's SM90 mixed-input
mainloop computes it (``collective/sm90_mma_tma_gmma_rs_warpspecialized_mixed_input.hpp``
with ``detail/collective/mixed_input_utils.hpp``).

Buffers: ``A`` the narrow operand (int4/uint4/int2/uint2 packed, int8/uint8, FP8), M x K
row-major (K-major, as the mainloop requires of the transformed operand); ``S`` its scales
and, in ``scale_zero`` mode, ``Z`` its zero points, each ``K / group_size`` x M row-major
(CUTLASS's (M, K / group_size) tensor with stride (1, M): M-major), in the wide type;
``B`` the wide operand (bfloat16/float16) in ``layout_b``; ``D`` the output.

Dequantisation is part of the function, in the wide type the kernel states: CUTLASS
converts A to the scale type (exact for every narrow type), multiplies by the group's
scale and, with zero points, adds the zero (``ConvertAndScaleWithZero``: ``scale * A +
zeros``), each a wide-type operation, and feeds that W to the MMA:
``W[m, k] = rnd(rnd(A[m, k] S[k // g, m]) + Z[k // g, m])`` (``rnd``: round to nearest even in
the wide type). The multiply and the add are ``mul.f16``/``add.f16`` (or bf16) without a
rounding modifier, which ptxas may contract into one FMA, ``rnd(A S + Z)``; the bound
allows either (docs/verification.md, "Mixed-input GEMM with scales").
D = alpha W @ B + beta C, exact in float64 from that W.
"""
from __future__ import annotations

import math

import numpy as np

from ..model import Problem, SpecError, dtype_kind
from ..numerics import FORMATS
from ..packed import element_range, is_packed
from .gemm import _logical, gemm_epilogue_roundings, saturate_to_output
from .spec import OpSpec, _fmt, _inputs_of, _out_name, range_int_products

MODES = ("scale", "scale_zero")


def group_size(problem: Problem) -> int:
    p = problem.params
    g, k = int(p.get("group_size", 0)), int(p["K"])
    if g <= 0 or k % g:
        raise SpecError(f"problem {problem.problem_id}: mixed_input_gemm needs K ({k}) to be a positive "
                        f"multiple of params.group_size ({g}); give a group size that divides K")
    return g


def mode(problem: Problem) -> str:
    value = str(problem.params.get("mode", "scale"))
    if value not in MODES:
        raise SpecError(f"problem {problem.problem_id}: mixed_input_gemm mode must be one of {MODES}, got {value!r}")
    return value


def round_to(values, dtype: str) -> np.ndarray:
    """float64 ``values`` rounded to nearest even in float ``dtype`` (subnormals included),
    straight from float64 (no double rounding through float32); beyond the largest finite
    value: infinity."""
    fmt = FORMATS[dtype]
    values = np.asarray(values, dtype=np.float64)
    _, exponent = np.frexp(np.maximum(np.abs(values), fmt.tiny))
    quantum = np.ldexp(fmt.unit_roundoff, exponent)  # one ulp of the value's binade
    with np.errstate(invalid="ignore", over="ignore"):
        rounded = np.rint(values / quantum) * quantum
        return np.where(np.abs(rounded) > fmt.max_finite, np.copysign(np.inf, values), rounded)


def _expand(groups, problem: Problem) -> np.ndarray:
    """(K / g, M) per-group values -> (M, K / g, 1): broadcasts over A viewed as (M, K / g, g)."""
    p = problem.params
    m, k, g = int(p["M"]), int(p["K"]), group_size(problem)
    return np.asarray(groups).reshape(k // g, m).T.reshape(m, k // g, 1)


def dequantised(inputs: dict, problem: Problem, fused: bool = False) -> np.ndarray:
    """W (M x K, float64) as the kernel feeds it to the MMA: rnd(rnd(A S) + Z), or with
    ``fused`` the contracted rnd(A S + Z) (the same without zero points)."""
    p = problem.params
    m, k, g = int(p["M"]), int(p["K"]), group_size(problem)
    wide = problem.buffer("S").dtype
    a, s = _inputs_of(problem, inputs, "A", "S")
    a = _logical(np.asarray(a).reshape(problem.buffer("A").shape), p.get("layout_a", "row")).reshape(m, k // g, g)
    product = a * _expand(s, problem)  # exact: a narrow value has at most 4 significant bits more than 8
    if mode(problem) == "scale":
        return round_to(product, wide).reshape(m, k)
    z = _expand(_inputs_of(problem, inputs, "Z")[0], problem)
    w = round_to(product + z, wide) if fused else round_to(round_to(product, wide) + z, wide)
    return w.reshape(m, k)


def _gemm(w, inputs: dict, problem: Problem, magnitudes: bool):
    """alpha W @ B + beta C (``magnitudes``: of absolute values), in D's layout."""
    p = problem.params
    b = _logical(np.asarray(inputs["B"]).reshape(problem.buffer("B").shape), p.get("layout_b", "row"))
    alpha, beta = float(p.get("alpha", 1.0)), float(p.get("beta", 0.0))
    if magnitudes:
        w, b, alpha, beta = np.abs(w), np.abs(b), abs(alpha), abs(beta)
    d = alpha * (w @ b)
    layout_c = p.get("layout_c", "row")
    if beta != 0.0:
        c = _logical(np.asarray(inputs["C"]).reshape(problem.buffer("C").shape), layout_c)
        d = d + beta * (np.abs(c) if magnitudes else c)
    return _logical(d, layout_c)


def ref_mixed_input_gemm(inputs, problem):
    """D = alpha W @ B + beta C with W dequantised as the kernel does, stored as the
    epilogue converts to D's dtype."""
    out = _out_name(problem)
    d = _gemm(dequantised(inputs, problem), inputs, problem, False)
    return {out: saturate_to_output(d, problem.buffer(out).dtype)}


def scale_mixed_input_gemm(inputs, problem):
    """S = |alpha| |W| @ |B| + |beta| |C|."""
    return {_out_name(problem): _gemm(dequantised(inputs, problem), inputs, problem, True)}


def pointwise_mixed_input_gemm(inputs, problem, reference):
    count = gemm_epilogue_roundings(problem)
    if count == 0:
        return {}
    return {k: count * v for k, v in scale_mixed_input_gemm(inputs, problem).items()}


def contraction_spread(inputs, problem) -> dict:
    """|alpha| |W - W_fused| @ |B|: how far the kernel's sum may move when ptxas contracts
    the dequantisation's multiply and add (0 without zero points, or where both agree)."""
    out = _out_name(problem)
    if mode(problem) == "scale":
        return {out: 0.0}
    gap = np.abs(dequantised(inputs, problem) - dequantised(inputs, problem, fused=True))
    p = problem.params
    b = _logical(np.abs(np.asarray(inputs["B"])).reshape(problem.buffer("B").shape), p.get("layout_b", "row"))
    return {out: _logical(abs(float(p.get("alpha", 1.0))) * (gap @ b), p.get("layout_c", "row"))}


class MixedInputOpSpec(OpSpec):
    """The GEMM bound on the dequantised W, plus the contraction spread (times 1 + u_out,
    as the output rounding scales it)."""

    def bounds(self, inputs: dict, problem: Problem, reference: dict) -> dict:
        out = super().bounds(inputs, problem, reference)
        if self.tolerance(problem, problem.buffer(_out_name(problem)).dtype) is not None:
            return out
        spread = contraction_spread(inputs, problem)
        for name, extra in spread.items():
            u_out = FORMATS[problem.buffer(name).dtype].unit_roundoff if problem.buffer(name).dtype in FORMATS else 0.0
            out[name] = out[name] + np.asarray(extra, dtype=np.float64) * (1.0 + u_out)
        return out


def reduction_length(problem: Problem) -> int:
    return int(problem.params["K"])


def narrow_magnitude(problem: Problem) -> float:
    """The largest |A| a trial may draw: the element range's end for integers, 16 for FP8
    (the scale's domain is sized by it)."""
    dtype = problem.buffer("A").dtype
    if dtype_kind(dtype) == "f":
        return 16.0
    low, high = element_range(dtype) if is_packed(dtype) else (-128, 128) if dtype == "int8" else (0, 256)
    return float(max(abs(low), abs(high - 1), 1))


def range_mixed_input_gemm(problem: Problem, buffer) -> tuple:
    """Magnitudes the wide and edge trials may give each float input. |A S| <= 2 and
    |Z| <= 2, so |W| <= 4; B keeps K |W| |B| within a quarter of D's largest value and
    its products with W above float32's underflow; C is the GEMM's."""
    p = problem.params
    wide = _fmt(problem.buffer("S").dtype)
    out = _fmt(problem.buffer(_out_name(problem)).dtype)
    k = reduction_length(problem)
    if buffer.name == "A":
        return 2.0 ** -4, narrow_magnitude(problem)
    if buffer.name == "S":
        return 2.0 ** -8, 2.0 / narrow_magnitude(problem)
    if buffer.name == "Z":
        return 2.0 ** -8, 2.0
    if buffer.name == "C":
        return _fmt(buffer.dtype).tiny, out.max_finite / (4 * max(1.0, abs(float(p.get("beta", 1.0)))))
    acc = FORMATS["float32"]
    hi = min(out.max_finite, acc.max_finite) / (4 * 4 * k * max(1.0, abs(float(p.get("alpha", 1.0)))))
    return max(_fmt(buffer.dtype).tiny, math.sqrt(acc.tiny), wide.tiny), hi


integer_range = range_int_products(reduction_length, "A")


OPS = [
    MixedInputOpSpec("mixed_input_gemm", ref_mixed_input_gemm, reduction_length,
           "D = alpha (A S [+ Z]) @ B + beta C: A dequantised by per-group scales (zero points) along K",
           scale_mixed_input_gemm, range_mixed_input_gemm,
           "|alpha| |W| @ |B| + |beta| |C|, W the dequantised A, n = K (+ the contraction spread)",
           integer_range,
           pointwise_mixed_input_gemm,
           pointwise_text="e S_i, e the epilogue's float32 roundings of one term (as for gemm)",
           sizes="gemm", exact_flops=True),
]
