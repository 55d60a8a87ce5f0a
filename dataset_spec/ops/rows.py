"""Row ops over the last dim: softmax, rmsnorm, layernorm and row_sum."""
from __future__ import annotations

import math

import numpy as np

from ..numerics import FORMATS, bound_terms
from .biased_sums import biased_sum_of_squares, half_worst_case
from .spec import (OpSpec, _fmt, _inputs_of, _last_dim, _out_dtype, _out_name, _shaped, on_magnitudes,
                   range_int_sum, range_sum, stress_rows)


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


def _accumulator_roundoff(problem) -> float:
    p = problem.params
    return bound_terms(_out_dtype(problem), _last_dim(problem), str(p.get("accumulator") or ""),
                       str(p.get("math_input") or "")).u_acc


def _on_biased_rows(problem, x, magnitude, centre: bool):
    """gamma(n) / (2 u_acc) ``magnitude`` (rows x n) on rows whose sum of squares (of
    deviations, with ``centre``) may round with one sign (biased_sums), else 0; numpy or
    torch as ``x``."""
    rows = _rows(x, problem)
    u_acc = _accumulator_roundoff(problem)
    biased = biased_sum_of_squares(rows, u_acc, centre).reshape(-1, 1)
    return magnitude.reshape(rows.shape) * biased * half_worst_case(rows.shape[-1], u_acc)


def pointwise_rmsnorm(inputs, problem, reference):
    """The fixed roundings, and on rows whose squares leave few residues below the
    accumulator's ulp (biased roundings) the sum's worst case halved by the square root."""
    out = _out_name(problem)
    (x,) = _inputs_of(problem, inputs, "x")
    magnitude = abs(reference[out])
    biased = _on_biased_rows(problem, x, magnitude, centre=False).reshape(magnitude.shape)
    return {out: NORM_FIXED_ROUNDINGS * magnitude + biased}


def pointwise_layernorm(inputs, problem, reference):
    """The fixed roundings of the scale, and on rows whose squared deviations leave few
    residues below the accumulator's ulp the variance's worst case halved by the square
    root, on the centred part of the scale."""
    out = _out_name(problem)
    (x,) = _inputs_of(problem, inputs, "x")
    centred, shift, w, b = _layernorm_parts(inputs, problem)
    scale = (centred + shift) * abs(w) + abs(b)
    biased = _on_biased_rows(problem, x, centred * abs(w), centre=True)
    return {out: _shaped(problem, out, NORM_FIXED_ROUNDINGS * scale + biased)}


def _layernorm_parts(inputs, problem):
    """|x_i - mean| / std and (|x_i| + mean|x|) / std per row, w and b as rows."""
    x, w, b = _inputs_of(problem, inputs, "x", "w", "b")
    eps = float(problem.params.get("eps", 1e-5))
    x2 = _rows(x, problem)
    mean = x2.mean(axis=-1, keepdims=True)
    std = (((x2 - mean) ** 2).mean(axis=-1, keepdims=True) + eps) ** 0.5  # numpy or torch
    centred = abs(x2 - mean) / std
    shift = (abs(x2) + abs(x2).mean(axis=-1, keepdims=True)) / std
    return centred, shift, w.reshape(1, -1), b.reshape(1, -1)


def scale_layernorm(inputs, problem):
    """The mean's error is absolute in |x| (it shifts x_i - mean); the variance's error is
    relative; both are divided by the row's standard deviation."""
    centred, shift, w, b = _layernorm_parts(inputs, problem)
    scale = (centred + shift) * abs(w) + abs(b)
    return {_out_name(problem): _shaped(problem, _out_name(problem), scale)}


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


def ref_row_sum(inputs, problem):
    (x,) = _inputs_of(problem, inputs, "x")
    return {_out_name(problem): x.reshape(-1, _last_dim(problem)).sum(axis=-1)}


scale_row_sum = on_magnitudes(ref_row_sum)


def coverage_softmax(problem) -> list:
    """All-negative rows spread past exp's range, the maximum far ahead at either end,
    -inf and NaN in x."""
    from .items import CoverageItem
    return [CoverageItem("x", "negative_spread_row", -1), CoverageItem("x", "max_first_far", -1),
            CoverageItem("x", "max_last_far", -1), CoverageItem("x", "neg_inf"), CoverageItem("x", "nan")]


def coverage_norm(problem) -> list:
    """Rows with +inf and with -inf, NaN in x, and the output's subnormal results."""
    from .items import CoverageItem
    return [CoverageItem("x", "inf_row", -1), CoverageItem("x", "neg_inf_row", -1), CoverageItem("x", "nan"),
            CoverageItem("x", "zero_row", -1)]


def coverage_row_sum(problem) -> list:
    from .items import CoverageItem, output_items
    items = []
    if problem.buffer("x").dtype in FORMATS:
        items = [CoverageItem("x", "nan"), CoverageItem("x", "inf")]
    return items + output_items(problem, _out_name(problem), subnormal=False)


OPS = [
    OpSpec("softmax", ref_softmax, _last_dim, "row softmax over the last dim of x", scale_softmax,
           range_softmax, "2 out_i (the normaliser's sum and online rescalings), n = row length",
           pointwise_scale=pointwise_softmax, stress=stress_rows("SOFTMAX"), coverage=coverage_softmax,
           pointwise_text="out_i (4 (|x_i - max x| + sum_j out_j |x_j - max x|) + 6)"),
    OpSpec("rmsnorm", ref_rmsnorm, _last_dim, "x / rms(x) * w per row", None, range_norm,
           "|out_i| (every error is relative), n = row length", pointwise_scale=pointwise_rmsnorm,
           stress=stress_rows("NORM"), coverage=coverage_norm,
           pointwise_text="6 |out_i|, + gamma(n) / (2 u_acc) |out_i| on rows of biased roundings"),
    OpSpec("layernorm", ref_layernorm, _last_dim, "(x - mean) / std * w + b per row", scale_layernorm,
           range_norm, "(|x_i - mean| + |x_i| + mean|x|) / std * |w_i| + |b_i|, n = row length",
           pointwise_scale=pointwise_layernorm, stress=stress_rows("NORM"), coverage=coverage_norm,
           pointwise_text="6 S_i, + gamma(n) / (2 u_acc) |x_i - mean| / std |w_i| on rows of biased roundings"),
    OpSpec("row_sum", ref_row_sum, _last_dim, "out[i] = sum_j x[i, j]", scale_row_sum, range_sum,
           "sum_j |x[i, j]|, n = row length", range_int_sum(_last_dim), stress=stress_rows("ROW_SUM"),
           coverage=coverage_row_sum),
]
