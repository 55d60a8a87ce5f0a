"""The problem registry: per op, the float64 reference, the error model and the input domain.

Each op maps the group's float64 inputs to the float64 value every out/inout buffer must
hold (``reference``), gives the float64 magnitude scale ``S`` of the terms that produced
each output element (``error_scale``; ``numerics.BoundTerms`` turns it into a per-element
bound), the reduction length, and the magnitudes its inputs may take without overflow or
harmful underflow (``input_range``, used by the ``wide``, ``edge`` and ``stress`` trial
kinds), the inputs where its classic bugs live (``stress``, dataset_spec/stress.py) and
the range its integer inputs may take (``integer_range``).
``problem.tolerance`` (atol/rtol) replaces the bound with ``atol + rtol * |ref|``;
``problem.params["input_range"]`` ({buffer: [lo, hi]}) narrows or widens the domain.
"""
from __future__ import annotations

import importlib
import math
import sys
import types
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from .fp8 import is_fp8
from .model import DTYPES, Problem, SpecError
from .numerics import FORMATS, BoundTerms, bound_terms


@dataclass(frozen=True)
class OpSpec:
    """How the verifier judges one op.

    ``error_scale(inputs, problem) -> {out name: float64 array}``: the magnitude scale S of
    each output element (None: ``|reference|``, a purely relative error model).
    ``input_range(problem, buffer) -> (lo, hi)``: smallest and largest magnitude the
    ``wide``/``edge`` trials may give a float input buffer (None: DEFAULT_INPUT_RANGE).
    ``scale_text``: S as a formula, for the docs and the dataset card.
    ``integer_range(problem, buffer) -> (low, high) | None``: the values an integer input
    buffer takes, ``high`` exclusive (sequence letters; a GEMM's operands over their dtype's
    full range, narrowed only where the int32 accumulator could overflow); trials draw those
    buffers over it in every kind (verify/inputs.py). None: the buffer keeps its ``init``.
    ``pointwise_scale(inputs, problem, reference) -> {out name: P}``: magnitudes carried by
    a fixed number of roundings whatever the reduction length (epilogues, exp's argument),
    each counted once (None: no such term).
    ``stress(problem, buffer, context, previous) -> float64 array | None``: the buffer's
    stress-trial values (``previous``: the float64 values of the buffers drawn before it);
    None falls back to the generic in-domain row patterns (stress.GENERIC).
    """
    name: str
    reference: Callable  # (inputs: dict[str, ndarray float64], problem) -> dict[str, ndarray]
    reduction_length: Callable  # (problem) -> int
    description: str = ""
    error_scale: Optional[Callable] = None
    input_range: Optional[Callable] = None
    scale_text: str = "|ref|"
    integer_range: Optional[Callable] = None
    pointwise_scale: Optional[Callable] = None
    stress: Optional[Callable] = None
    pointwise_text: str = "0"

    def bound_terms(self, problem: Problem, dtype: str) -> BoundTerms:
        p = problem.params
        return bound_terms(dtype, self.reduction_length(problem), str(p.get("accumulator") or ""),
                           str(p.get("math_input") or ""), int(p.get("output_roundings", 1)))

    def tolerance(self, problem: Problem, dtype: str) -> Optional[tuple]:
        """(atol, rtol) when the problem overrides the bound with a fixed tolerance, else None."""
        override = problem.tolerance or {}
        if "atol" not in override and "rtol" not in override:
            return None
        return float(override.get("atol", 0.0)), float(override.get("rtol", 0.0))

    def scales(self, inputs: dict, problem: Problem, reference: dict) -> dict:
        """{out name: S} in float64, shaped like each output; ``|reference|`` when the op has
        no error scale (or its ``error_scale`` returns None)."""
        scale = self.error_scale(inputs, problem) if self.error_scale is not None else None
        if scale is None:
            return {k: np.abs(np.asarray(v, dtype=np.float64)) for k, v in reference.items()}
        return {k: np.abs(np.asarray(v, dtype=np.float64)).reshape(np.shape(reference[k]))
                for k, v in scale.items()}

    def pointwise_scales(self, inputs: dict, problem: Problem, reference: dict) -> dict:
        if self.pointwise_scale is None:
            return {}
        with np.errstate(invalid="ignore", over="ignore"):
            scale = self.pointwise_scale(inputs, problem, reference)
        return {k: np.abs(np.asarray(v, dtype=np.float64)).reshape(np.shape(reference[k]))
                for k, v in scale.items()}

    def bounds(self, inputs: dict, problem: Problem, reference: dict) -> dict:
        """{out name: per-element error bound} for one trial (float64 arrays)."""
        scales = pointwise = None
        out = {}
        for name, ref in reference.items():
            dtype = problem.buffer(name).dtype
            fixed = self.tolerance(problem, dtype)
            ref = np.asarray(ref, dtype=np.float64)
            if fixed is not None:
                out[name] = fixed[0] + fixed[1] * np.abs(np.where(np.isfinite(ref), ref, 0.0))
                continue
            if scales is None:
                with np.errstate(invalid="ignore", over="ignore"):
                    scales = self.scales(inputs, problem, reference)
                pointwise = self.pointwise_scales(inputs, problem, reference)
            out[name] = self.bound_terms(problem, dtype).bound(ref, scales[name], pointwise.get(name))
        return out

    def stress_values(self, problem: Problem, buffer, rng: np.random.Generator, domain: tuple,
                      previous: dict) -> np.ndarray:
        """A float input buffer's values for a stress trial (see dataset_spec/stress.py)."""
        from . import stress
        mean, std = init_moments(buffer)
        context = stress.StressContext(rng, mean, std, domain[0], domain[1], buffer.dtype,
                                       float(problem.params.get("eps", 1e-5)))
        values = self.stress(problem, buffer, context, previous) if self.stress is not None else None
        if values is None:
            values = stress.row_stress(stress.GENERIC, buffer.shape, context)
        return np.asarray(values, dtype=np.float64).reshape(buffer.shape)

    def domain(self, problem: Problem, buffer_name: str) -> tuple:
        """(lo, hi) magnitudes for a float input buffer under wide/edge/stress trials."""
        override = (problem.params.get("input_range") or {}).get(buffer_name)
        if override is not None:
            lo, hi = (float(v) for v in override)
        elif self.input_range is not None:
            lo, hi = self.input_range(problem, problem.buffer(buffer_name))
        else:
            lo, hi = DEFAULT_INPUT_RANGE
        fmt = FORMATS.get(problem.buffer(buffer_name).dtype)
        if fmt is not None:
            hi = min(hi, fmt.max_finite / 2)
            lo = max(lo, fmt.subnormal_min)
        if not 0 < lo <= hi:
            raise SpecError(f"problem {problem.problem_id}: input range of {buffer_name} is empty ({lo}, {hi})")
        return lo, hi


def init_moments(buffer) -> tuple:
    """(mean, std) of a float buffer's ``init`` distribution ((0, 1) when it has none)."""
    dist = buffer.init
    if dist is None:
        return 0.0, 1.0
    p = dist.params
    if dist.kind == "uniform":
        low, high = float(p.get("low", -1.0)), float(p.get("high", 1.0))
        return (low + high) / 2, (high - low) / math.sqrt(12)
    if dist.kind == "normal":
        return float(p.get("mean", 0.0)), float(p.get("std", 1.0))
    return 0.0, 1.0


# Ops that declare no domain (custom references) get 20 binades around 1.
DEFAULT_INPUT_RANGE = (2.0 ** -10, 2.0 ** 10)


def _fmt(dtype: str):
    return FORMATS.get(dtype, FORMATS["float32"])


def _out_dtype(problem: Problem) -> str:
    return problem.buffer(_out_name(problem)).dtype


def _inputs_of(problem: Problem, inputs: dict, *names: str) -> list:
    missing = [n for n in names if n not in inputs]
    if missing:
        raise SpecError(f"problem {problem.problem_id}: op {problem.op} needs buffers {missing}")
    return [inputs[n] for n in names]


def _out_name(problem: Problem) -> str:
    outs = [b.name for b in problem.buffers if b.role in ("out", "inout")]
    return outs[0]


def _shaped(problem: Problem, name: str, array: np.ndarray) -> np.ndarray:
    return array.reshape(problem.buffer(name).shape)


def ref_vector_add(inputs, problem):
    x, y = _inputs_of(problem, inputs, "x", "y")
    with np.errstate(invalid="ignore"):  # inf + -inf is NaN, as in IEEE
        return {_out_name(problem): x + y}


def ref_square(inputs, problem):
    (x,) = _inputs_of(problem, inputs, "x")
    return {_out_name(problem): x * x}


def ref_softmax(inputs, problem):
    (x,) = _inputs_of(problem, inputs, "x")
    x = x.reshape(-1, x.shape[-1])
    with np.errstate(invalid="ignore"):  # NaN rows (stress trials) stay NaN
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        out = e / e.sum(axis=-1, keepdims=True)
    return {_out_name(problem): _shaped(problem, _out_name(problem), out)}


def _rows(x, problem):
    n = problem.params.get("N") or x.shape[-1]
    return x.reshape(-1, n)


def ref_rmsnorm(inputs, problem):
    x, w = _inputs_of(problem, inputs, "x", "w")
    eps = float(problem.params.get("eps", 1e-6))
    x2 = _rows(x, problem)
    with np.errstate(invalid="ignore"):
        out = x2 / np.sqrt((x2 * x2).mean(axis=-1, keepdims=True) + eps) * w.reshape(1, -1)
    return {_out_name(problem): _shaped(problem, _out_name(problem), out)}


def ref_layernorm(inputs, problem):
    x, w, b = _inputs_of(problem, inputs, "x", "w", "b")
    eps = float(problem.params.get("eps", 1e-5))
    x2 = _rows(x, problem)
    with np.errstate(invalid="ignore"):
        mean = x2.mean(axis=-1, keepdims=True)
        var = ((x2 - mean) ** 2).mean(axis=-1, keepdims=True)
        out = (x2 - mean) / np.sqrt(var + eps) * w.reshape(1, -1) + b.reshape(1, -1)
    return {_out_name(problem): _shaped(problem, _out_name(problem), out)}


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
    kind = DTYPES[dtype][1]
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


def _last_dim(problem: Problem) -> int:
    return int(problem.buffer("x").shape[-1]) if any(b.name == "x" for b in problem.buffers) else 1


# ---- error scales S (float64 magnitudes of the terms behind each output element) ----------

def on_magnitudes(reference):
    """The error scale of a sum of products: the reference evaluated on |inputs|."""
    def scale(inputs, problem):
        return reference({name: np.abs(value) for name, value in inputs.items()}, problem)
    scale.__doc__ = f"{reference.__name__} of |inputs|"
    return scale


def scale_vector_add(inputs, problem):
    """An IEEE add is exactly rounded (out = (x + y)(1 + d), |d| <= u): no term scales
    with |x| + |y|, so cancellation earns no allowance."""
    out = _out_name(problem)
    return {out: np.zeros(problem.buffer(out).shape)}


def pointwise_vector_add(inputs, problem, reference):
    """A float32 add rounded again to a narrower output (double rounding): u_acc |ref|."""
    out = _out_name(problem)
    narrower = problem.buffer(out).dtype not in ("float32", "float64")
    return {out: np.abs(reference[out]) * (1.0 if narrower else 0.0)}


# Roundings of exp's argument, relative to |x_i - max| (x - max, the product with log2(e),
# log2(e)'s own float32 rounding, one spare), and the fixed roundings of out_i (exp's own
# error of up to 2 ulp for e_i and for the normaliser's weighted mean, the division or
# reciprocal and product, one spare).
SOFTMAX_ARGUMENT_ROUNDINGS = 4
SOFTMAX_FIXED_ROUNDINGS = 6


def _softmax_parts(problem, x):
    x = x.reshape(-1, x.shape[-1])
    with np.errstate(over="ignore", invalid="ignore"):
        dist = x.max(axis=-1, keepdims=True) - x
        e = np.exp(-dist)
        out = e / e.sum(axis=-1, keepdims=True)
        weighted = np.where(out > 0, out * dist, 0.0)
    return out, np.where(out > 0, dist, 0.0), weighted.sum(axis=-1, keepdims=True)


def scale_softmax(inputs, problem):
    """The normaliser's n-term sum, and with online softmax up to n rescalings of it, each
    a relative error of out_i: S = 2 out_i."""
    (x,) = _inputs_of(problem, inputs, "x")
    out, _, _ = _softmax_parts(problem, x)
    return {_out_name(problem): _shaped(problem, _out_name(problem), 2.0 * np.nan_to_num(out))}


def pointwise_softmax(inputs, problem, reference):
    """exp turns its argument's roundoff (relative to |x_i - max|) into a relative error of
    e_i; the normaliser carries the out-weighted mean of those. Not multiplied by any
    accumulation margin: a few roundings, whatever the row length."""
    (x,) = _inputs_of(problem, inputs, "x")
    out, dist, spread = _softmax_parts(problem, x)
    with np.errstate(over="ignore", invalid="ignore"):
        scale = out * (SOFTMAX_ARGUMENT_ROUNDINGS * (dist + spread) + SOFTMAX_FIXED_ROUNDINGS)
    return {_out_name(problem): _shaped(problem, _out_name(problem), np.nan_to_num(scale, posinf=np.inf))}


# A norm's fixed roundings of out_i: the mean's division, + eps, (r)sqrt (up to 2 ulp), the
# products with rstd and w (and + b), one spare.
NORM_FIXED_ROUNDINGS = 6


def pointwise_rmsnorm(inputs, problem, reference):
    out = _out_name(problem)
    return {out: NORM_FIXED_ROUNDINGS * np.abs(reference[out])}


def pointwise_layernorm(inputs, problem, reference):
    out = _out_name(problem)
    return {out: NORM_FIXED_ROUNDINGS * scale_layernorm(inputs, problem)[out]}


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


def pointwise_conv(inputs, problem, reference):
    """The bias add after the C R S products."""
    return scale_conv2d_bias_relu(inputs, problem)


def scale_layernorm(inputs, problem):
    """The mean's error is absolute in |x| (it shifts x_i - mean); the variance's error is
    relative; both are divided by the row's standard deviation."""
    x, w, b = _inputs_of(problem, inputs, "x", "w", "b")
    eps = float(problem.params.get("eps", 1e-5))
    x2 = _rows(x, problem)
    mean = x2.mean(axis=-1, keepdims=True)
    std = np.sqrt(((x2 - mean) ** 2).mean(axis=-1, keepdims=True) + eps)
    centred = np.abs(x2 - mean) / std
    shift = (np.abs(x2) + np.abs(x2).mean(axis=-1, keepdims=True)) / std
    scale = (centred + shift) * np.abs(w.reshape(1, -1)) + np.abs(b.reshape(1, -1))
    return {_out_name(problem): _shaped(problem, _out_name(problem), scale)}


def scale_gemm(inputs, problem):
    p = problem.params
    abs_inputs = {k: np.abs(v) for k, v in inputs.items()}
    abs_problem = Problem(problem.problem_id, problem.op, problem.buffers,
                          {**p, "alpha": abs(float(p.get("alpha", 1.0))), "beta": abs(float(p.get("beta", 0.0)))})
    return gemm_exact(abs_inputs, abs_problem)


# ---- input domains (lo, hi) for wide and edge trials ------------------------------------

def range_vector_add(problem, buffer):
    return _fmt(buffer.dtype).tiny, _fmt(_out_dtype(problem)).max_finite / 2


def range_square(problem, buffer):
    out = _fmt(_out_dtype(problem))
    return math.sqrt(out.tiny), math.sqrt(out.max_finite) / 2


def range_softmax(problem, buffer):
    # x - max(x) must stay finite in float32, where kernels compute it
    return _fmt(buffer.dtype).tiny, min(_fmt(buffer.dtype).max_finite, FORMATS["float32"].max_finite) / 4


def range_norm(problem, buffer):
    """x: the float32 sum of squares of a row must not overflow, and squares stay normal;
    w, b: the output (up to sqrt(N) * |w|) must fit the output dtype."""
    n = _last_dim(problem)
    f32 = FORMATS["float32"]
    if buffer.name == "x":
        return max(_fmt(buffer.dtype).tiny, math.sqrt(f32.tiny)), math.sqrt(f32.max_finite / n) / 2
    return _fmt(buffer.dtype).tiny, _fmt(_out_dtype(problem)).max_finite / (4 * math.sqrt(n))


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
    narrow = FORMATS.get(str(p.get("math_input") or ""))
    if narrow is not None:  # operands rounded to float16/bfloat16 before the multiply
        lo, hi = max(lo, narrow.tiny), min(hi, math.sqrt(narrow.max_finite) / 2)
    return lo, hi


# ---- stress inputs (dataset_spec/stress.py) --------------------------------------------

def stress_vector_add(problem, buffer, context, previous):
    from .stress import vector_add_stress
    return vector_add_stress(buffer.name, buffer.shape, context, previous)


def stress_square(problem, buffer, context, previous):
    from .stress import square_stress
    return square_stress(buffer.shape, context)


def stress_rows(patterns_name: str, buffers=("x",)):
    """Row patterns along the last axis for the named buffers (others: their init)."""
    def stress(problem, buffer, context, previous):
        from . import stress as st
        if buffer.name not in buffers:
            return st.row_stress((st.p_normal,), buffer.shape, context)
        return st.row_stress(getattr(st, patterns_name), buffer.shape, context)
    return stress


def stress_gemm(problem, buffer, context, previous):
    """A's rows and B's columns along K (in their stored layouts); C keeps its init."""
    from . import stress as st
    p = problem.params
    if buffer.name == "A":
        axis = -1 if p.get("layout_a", "row") == "row" else 0
        patterns = st.GEMM_A if is_float_dtype(buffer.dtype) else st.PRODUCTS
        return st.row_stress(patterns, buffer.shape, context, axis)
    if buffer.name == "B":
        axis = 0 if p.get("layout_b", "row") == "row" else -1
        return st.row_stress(st.GEMM_B, buffer.shape, context, axis)
    return st.row_stress((st.p_normal,), buffer.shape, context)


def stress_batch_matmul(problem, buffer, context, previous):
    from . import stress as st
    if buffer.name == "A":
        return st.row_stress(st.GEMM_A, buffer.shape, context, -1)
    return st.row_stress(st.GEMM_B, buffer.shape, context, -2)


def stress_conv(problem, buffer, context, previous):
    """Filters tail-heavy, alternating or wide along their C R S reduction; X likewise
    along its rows. No NaN: relu(NaN) is max(NaN, 0), which IEEE maxNum makes 0."""
    from . import stress as st
    shape = tuple(buffer.shape)
    if buffer.name == "W":
        flat = st.row_stress(st.PRODUCTS, (shape[0], int(np.prod(shape[1:]))), context)
        return flat.reshape(shape)
    if buffer.name == "X":
        return st.row_stress(st.PRODUCTS, shape, context)
    return st.row_stress((st.p_normal,), shape, context)


def is_float_dtype(dtype: str) -> bool:
    return dtype in FORMATS


# ---- integer ranges ------------------------------------------------------------------

INT32_LIMIT = 2 ** 31  # the accumulator of integer products and sums


def _dtype_range(dtype: str) -> tuple:
    info = np.iinfo(np.dtype(f"{DTYPES[dtype][1]}{DTYPES[dtype][0]}"))
    return int(info.min), int(info.max) + 1


def range_int_products(*operands: str):
    """Full dtype range for the named operands of an n-term integer sum of products,
    narrowed only where n max|a| max|b| could reach 2^31 (the int32 accumulator)."""
    def integer_range(problem, buffer):
        if buffer.name not in operands:
            return None
        low, high = _dtype_range(buffer.dtype)
        n = max(1, int(get_op(problem.op).reduction_length(problem)))
        others = [max(abs(a), abs(b - 1)) for a, b in
                  (_dtype_range(problem.buffer(name).dtype) for name in operands if name != buffer.name)]
        other = max(others) if others else 1
        cap = max(1, (INT32_LIMIT - 1) // (n * max(1, other)))
        return max(low, -cap), min(high, cap + 1)
    return integer_range


def range_int_sum(problem, buffer):
    """Addends whose n-term sum stays inside the output's integer range."""
    out = problem.buffer(_out_name(problem)).dtype
    if out not in DTYPES or DTYPES[out][1] not in ("i", "u") or buffer.dtype in FORMATS:
        return None
    low, high = _dtype_range(buffer.dtype)
    out_low, out_high = _dtype_range(out)
    n = max(1, int(get_op(problem.op).reduction_length(problem))) * (2 if problem.op == "vector_add" else 1)
    return max(low, -(-out_low // n)), min(high, (out_high - 1) // n + 1)


# ---- integer ops ------------------------------------------------------------------------

def ref_smith_waterman(inputs, problem):
    """Smith-Waterman local alignment with affine gaps, per pair of rows of ``query`` (P, M)
    and ``target`` (P, N): ``row_best[p, i] = max_j H[i+1][j]``. Textbook recurrences in
    int64 (a gap of length L costs gap_open + (L - 1) * gap_extend):
    E[i][j] = max(E[i][j-1] - ext, H[i][j-1] - open); F[i][j] = max(F[i-1][j] - ext,
    H[i-1][j] - open); H[i][j] = max(0, H[i-1][j-1] + s(q_i, t_j), E[i][j], F[i][j])."""
    query, target = (np.rint(a).astype(np.int64) for a in _inputs_of(problem, inputs, "query", "target"))
    p = problem.params
    match, mismatch = int(p["match"]), int(p["mismatch"])
    gap_open, gap_extend = int(p["gap_open"]), int(p["gap_extend"])
    pairs, m = query.shape
    n = target.shape[1]
    neg = np.int64(-(1 << 40))
    h_up = np.zeros((pairs, n + 1), dtype=np.int64)       # H of the row above (row 0: zeros)
    f_up = np.full((pairs, n + 1), neg, dtype=np.int64)
    best = np.zeros((pairs, m), dtype=np.int64)
    for i in range(m):
        subst = np.where(query[:, i:i + 1] == target, match, mismatch)
        f_row = np.maximum(f_up[:, 1:] - gap_extend, h_up[:, 1:] - gap_open)
        diag = h_up[:, :-1] + subst
        h_row = np.zeros((pairs, n + 1), dtype=np.int64)
        e = np.full(pairs, neg, dtype=np.int64)
        for j in range(1, n + 1):
            e = np.maximum(e - gap_extend, h_row[:, j - 1] - gap_open)
            h_row[:, j] = np.maximum(np.maximum(diag[:, j - 1], 0), np.maximum(e, f_row[:, j - 1]))
        best[:, i] = h_row.max(axis=1)
        h_up = h_row
        f_up = np.concatenate([np.full((pairs, 1), neg), f_row], axis=1)
    return {_out_name(problem): best.astype(np.float64)}


def range_alphabet(problem, buffer):
    """Sequence letters 0 .. alphabet - 1 (4: DNA-like)."""
    return 0, int(problem.params.get("alphabet", 4))


# ---- ops of the TVM source: batched GEMM, NCHW convolutions, row reduction ----------------

def ref_batch_matmul(inputs, problem):
    """C[b] = A[b] @ B[b], row-major."""
    a, b = _inputs_of(problem, inputs, "A", "B")
    a = a.reshape(problem.buffer("A").shape)
    b = b.reshape(problem.buffer("B").shape)
    return {_out_name(problem): np.matmul(a, b)}


scale_batch_matmul = on_magnitudes(ref_batch_matmul)


def batch_matmul_length(problem: Problem) -> int:
    return int(problem.buffer("A").shape[-1])


def _windows(x, problem, kernel):
    """(N, C, H', W', R, S) sliding windows of the zero-padded NCHW input (stride 1)."""
    pad = int(problem.params.get("padding", 0))
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    return np.lib.stride_tricks.sliding_window_view(x, kernel, axis=(2, 3))


def _conv_nchw(x, w, problem):
    x = x.reshape(problem.buffer("X").shape)
    w = w.reshape(problem.buffer("W").shape)
    return np.einsum("nchwij,kcij->nkhw", _windows(x, problem, w.shape[2:]), w, optimize=True)


def ref_conv2d_bias_relu(inputs, problem):
    """Y = relu(conv2d(X, W) + bias), NCHW / KCRS, stride 1, zero padding params.padding."""
    x, w, bias = _inputs_of(problem, inputs, "X", "W", "bias")
    y = _conv_nchw(x, w, problem) + bias.reshape(1, -1, 1, 1)
    return {_out_name(problem): np.maximum(y, 0.0)}


def scale_conv2d_bias_relu(inputs, problem):
    x, w, bias = _inputs_of(problem, inputs, "X", "W", "bias")  # the relu's clamp is not part of S
    return {_out_name(problem): _conv_nchw(np.abs(x), np.abs(w), problem) + np.abs(bias).reshape(1, -1, 1, 1)}


def conv_length(problem: Problem) -> int:
    k, c, r, s = problem.buffer("W").shape
    return int(c * r * s)


def _depthwise(x, w, problem):
    x = x.reshape(problem.buffer("X").shape)
    w = w.reshape(problem.buffer("W").shape)   # (C, 1, R, S)
    pad = int(problem.params.get("padding", 0))
    h, wd = x.shape[2:]
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    out = np.zeros(x.shape[:2] + (h + 2 * pad - w.shape[2] + 1, wd + 2 * pad - w.shape[3] + 1))
    for i in range(w.shape[2]):
        for j in range(w.shape[3]):
            out += xp[:, :, i:i + out.shape[2], j:j + out.shape[3]] * w[:, 0, i, j].reshape(1, -1, 1, 1)
    return out


def ref_depthwise_conv2d(inputs, problem):
    """Y[n, c] = conv2d(X[n, c], W[c, 0]), NCHW, stride 1, zero padding params.padding."""
    x, w = _inputs_of(problem, inputs, "X", "W")
    return {_out_name(problem): _depthwise(x, w, problem)}


scale_depthwise_conv2d = on_magnitudes(ref_depthwise_conv2d)


def depthwise_length(problem: Problem) -> int:
    c, _, r, s = problem.buffer("W").shape
    return int(r * s)


def ref_row_sum(inputs, problem):
    (x,) = _inputs_of(problem, inputs, "x")
    return {_out_name(problem): x.reshape(-1, _last_dim(problem)).sum(axis=-1)}


scale_row_sum = on_magnitudes(ref_row_sum)


def range_products(problem, buffer):
    """Operands of a float32 sum of n products: products neither overflow n-fold nor
    underflow the accumulator."""
    n = get_op(problem.op).reduction_length(problem)
    f32 = FORMATS["float32"]
    return max(_fmt(buffer.dtype).tiny, math.sqrt(f32.tiny)), math.sqrt(_fmt(_out_dtype(problem)).max_finite / (4 * n))


def range_sum(problem, buffer):
    return _fmt(buffer.dtype).tiny, _fmt(_out_dtype(problem)).max_finite / (4 * _last_dim(problem))


# ---- user references -------------------------------------------------------------------

def _load_custom(problem: Problem, attribute: str, required: bool = True):
    """A function from the user's reference module: from ``params.reference_source`` (the
    module's text, shipped inside the dataset) when present, else imported by name with
    ``params.reference_path`` (a folder) on sys.path."""
    target = problem.params.get("reference")
    if not target or ":" not in str(target):
        raise SpecError(f"problem {problem.problem_id}: op custom needs params.reference "
                        f"= 'module:function', got {target!r}")
    module_name, func_name = str(target).split(":", 1)
    source = problem.params.get("reference_source")
    try:
        if source:
            module = _module_from_source(module_name, source)
        else:
            folder = problem.params.get("reference_path")
            if folder and folder not in sys.path:
                sys.path.insert(0, folder)
            module = importlib.import_module(module_name)
    except Exception as exc:
        raise SpecError(f"problem {problem.problem_id}: cannot load reference module {module_name!r}: "
                        f"{type(exc).__name__}: {exc}") from None
    name = func_name if attribute == "reference" else f"{func_name}_{attribute}"
    func = getattr(module, name, None)
    if func is None and required:
        raise SpecError(f"problem {problem.problem_id}: reference module {module_name!r} has no {name!r}")
    return func


_SOURCE_MODULES: dict = {}


def _module_from_source(module_name: str, source: str):
    key = (module_name, source)
    if key not in _SOURCE_MODULES:
        module = types.ModuleType(module_name)
        exec(compile(source, f"<reference {module_name}>", "exec"), module.__dict__)
        _SOURCE_MODULES[key] = module
    return _SOURCE_MODULES[key]


def ref_custom(inputs, problem):
    """A user reference ``module:function`` (params.reference). An optional
    ``function_error_scale(inputs, problem)`` in the same module gives S."""
    return _load_custom(problem, "reference")(inputs, problem)


def scale_custom(inputs, problem):
    """The module's ``<function>_error_scale``, or None (S = |out|) when it has none."""
    func = _load_custom(problem, "error_scale", required=False)
    return func(inputs, problem) if func is not None else None


OPS = {
    spec.name: spec for spec in [
        OpSpec("vector_add", ref_vector_add, lambda p: 1, "out = x + y", scale_vector_add, range_vector_add,
               "0 (exactly rounded)", range_int_sum, pointwise_vector_add, stress_vector_add,
               "|out_i| when the output is narrower than float32 (double rounding), else 0"),
        OpSpec("square", ref_square, lambda p: 1, "out = x * x", None, range_square, "x * x",
               stress=stress_square),
        OpSpec("softmax", ref_softmax, _last_dim, "row softmax over the last dim of x", scale_softmax,
               range_softmax, "2 out_i (the normaliser's sum and online rescalings), n = row length",
               pointwise_scale=pointwise_softmax, stress=stress_rows("SOFTMAX"),
               pointwise_text="out_i (4 (|x_i - max x| + sum_j out_j |x_j - max x|) + 6)"),
        OpSpec("rmsnorm", ref_rmsnorm, _last_dim, "x / rms(x) * w per row", None, range_norm,
               "|out_i| (every error is relative), n = row length", pointwise_scale=pointwise_rmsnorm,
               stress=stress_rows("NORM"), pointwise_text="6 |out_i|"),
        OpSpec("layernorm", ref_layernorm, _last_dim, "(x - mean) / std * w + b per row", scale_layernorm,
               range_norm, "(|x_i - mean| + |x_i| + mean|x|) / std * |w_i| + |b_i|, n = row length",
               pointwise_scale=pointwise_layernorm, stress=stress_rows("NORM"), pointwise_text="6 S_i"),
        OpSpec("gemm", ref_gemm, gemm_reduction_length, "D = alpha A@B + beta C with layouts", scale_gemm,
               range_gemm, "|alpha| |A| @ |B| + |beta| |C|, n = K", range_int_products("A", "B"),
               pointwise_gemm, stress_gemm,
               "e S_i, e the epilogue's float32 roundings of one term (alpha, beta, their products, the add)"),
        OpSpec("smith_waterman", ref_smith_waterman, lambda p: 1,
               "row_best[p, i] = max_j H[i][j] of a Smith-Waterman alignment with affine gaps of "
               "query[p] against target[p]", None, None, "exact (int32 scores)",
               integer_range=range_alphabet),
        OpSpec("batch_matmul", ref_batch_matmul, batch_matmul_length, "C[b] = A[b] @ B[b]", scale_batch_matmul,
               range_products, "|A[b]| @ |B[b]|, n = K", range_int_products("A", "B"),
               stress=stress_batch_matmul),
        OpSpec("conv2d_bias_relu", ref_conv2d_bias_relu, conv_length,
               "Y = relu(conv2d(X, W) + bias), NCHW, stride 1, params.padding", scale_conv2d_bias_relu,
               range_products, "conv2d(|X|, |W|) + |bias|, n = C R S", range_int_products("X", "W"),
               pointwise_conv, stress_conv, "S_i (the bias add)"),
        OpSpec("depthwise_conv2d", ref_depthwise_conv2d, depthwise_length,
               "Y[n, c] = conv2d(X[n, c], W[c]), NCHW, stride 1, params.padding", scale_depthwise_conv2d,
               range_products, "depthwise_conv2d(|X|, |W|), n = R S", range_int_products("X", "W"),
               stress=stress_conv),
        OpSpec("row_sum", ref_row_sum, _last_dim, "out[i] = sum_j x[i, j]", scale_row_sum, range_sum,
               "sum_j |x[i, j]|, n = row length", range_int_sum, stress=stress_rows("ROW_SUM")),
        OpSpec("custom", ref_custom, lambda p: int(p.params.get("reduction_length", 1)),
               "user reference module:function", scale_custom, None,
               "the module's <function>_error_scale, else |out|; n = params.reduction_length"),
    ]
}


# Ops of the LLM-operator sources (attention, fused norms, MLPs) live in their own module.
from .llm_ops import LLM_OPS  # noqa: E402  (needs OpSpec and the helpers above)

OPS.update({spec.name: spec for spec in LLM_OPS})


def get_op(name: str) -> OpSpec:
    try:
        return OPS[name]
    except KeyError:
        raise SpecError(f"unknown op {name!r}; known ops: {', '.join(sorted(OPS))} "
                        f"(or op 'custom' with params.reference = 'module:function')") from None

from .mugraph import op_spec as _mugraph_op  # noqa: E402  (Mirage muGraphs: the reference is the muGraph)
OPS["mugraph"] = _mugraph_op(OpSpec)
