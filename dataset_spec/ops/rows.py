"""Row ops over the last dim: softmax, rmsnorm, layernorm, add_rmsnorm (the residual add
fused before an RMSNorm) and row_sum.

The norms may also declare their row statistics as outputs, by buffer name: ``rstd`` (1 /
sqrt(var + eps), one per row) for every norm, ``mean`` for layernorm, and for add_rmsnorm
the stored sum ``s`` = x + r. Each gets its own error model (below); the main output is the
first other out buffer."""
from __future__ import annotations

import math

import numpy as np

from ..numerics import FORMATS, bound_terms
from .biased_sums import biased_sum_of_squares, half_worst_case
from .spec import (OpSpec, _declared, _fmt, _inputs_of, _last_dim, _main_out, _out_name, _shaped,
                   array_namespace, is_tensor, narrow_output, on_magnitudes, range_int_sum, range_sum, row_max,
                   stress_rows)

STATISTICS = ("rstd", "mean")   # a norm's per-row statistics, when the problem declares them
ADD_NORM_OUTPUTS = ("s",) + STATISTICS


def ref_softmax(inputs, problem):
    (x,) = _inputs_of(problem, inputs, "x")
    x = x.reshape(-1, x.shape[-1])
    xp = array_namespace(x)
    with np.errstate(invalid="ignore"):  # NaN rows (stress trials) stay NaN
        e = xp.exp(x - row_max(x))
        out = e / e.sum(axis=-1, keepdims=True)
    return {_out_name(problem): _shaped(problem, _out_name(problem), out)}


def _rows(x, problem):
    n = problem.params.get("N") or x.shape[-1]
    return x.reshape(-1, n)


def _row_statistic(problem, name: str, per_row):
    """A per-row statistic (rows x 1) in the declared buffer's shape."""
    shape = problem.buffer(name).shape
    return per_row.reshape(tuple(shape)) if is_tensor(per_row) else np.asarray(per_row).reshape(shape)


def _rms_parts(x, w, problem):
    """Rows of x, rstd per row (rows x 1) and the weight as a row (offset + w: Gemma's
    ``params.offset`` = 1)."""
    eps = float(problem.params.get("eps", 1e-6))
    x2 = _rows(x, problem)
    with np.errstate(invalid="ignore", divide="ignore"):
        rstd = 1.0 / array_namespace(x2).sqrt((x2 * x2).mean(axis=-1, keepdims=True) + eps)
    return x2, rstd, float(problem.params.get("offset", 0.0)) + w.reshape(1, -1)


def ref_rmsnorm(inputs, problem):
    x, w = _inputs_of(problem, inputs, "x", "w")
    x2, rstd, weight = _rms_parts(x, w, problem)
    out = _main_out(problem, STATISTICS)
    with np.errstate(invalid="ignore"):
        result = {out: _shaped(problem, out, x2 * rstd * weight)}
    if _declared(problem, "rstd"):
        result["rstd"] = _row_statistic(problem, "rstd", rstd)
    return result


def outputs_rmsnorm(problem):
    return (_main_out(problem, STATISTICS),) + tuple(n for n in ("rstd",) if _declared(problem, n))


def ref_add_rmsnorm(inputs, problem):
    """s = x + r (the residual stream, stored), y = rmsnorm(s) * (offset + w)."""
    x, r, w = _inputs_of(problem, inputs, "x", "r", "w")
    with np.errstate(invalid="ignore"):
        s = x + r
    x2, rstd, weight = _rms_parts(s, w, problem)
    out = _main_out(problem, ADD_NORM_OUTPUTS)
    with np.errstate(invalid="ignore"):
        result = {out: _shaped(problem, out, x2 * rstd * weight)}
    if _declared(problem, "s"):
        result["s"] = s.reshape(problem.buffer("s").shape)
    if _declared(problem, "rstd"):
        result["rstd"] = _row_statistic(problem, "rstd", rstd)
    return result


def outputs_add_rmsnorm(problem):
    return (_main_out(problem, ADD_NORM_OUTPUTS),) + tuple(n for n in ("s", "rstd") if _declared(problem, n))


def ref_layernorm(inputs, problem):
    x, w, b = _inputs_of(problem, inputs, "x", "w", "b")
    eps = float(problem.params.get("eps", 1e-5))
    x2 = _rows(x, problem)
    out_name = _main_out(problem, STATISTICS)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = x2.mean(axis=-1, keepdims=True)
        var = ((x2 - mean) ** 2).mean(axis=-1, keepdims=True)
        rstd = 1.0 / array_namespace(x2).sqrt(var + eps)
        out = (x2 - mean) * rstd * w.reshape(1, -1) + b.reshape(1, -1)
    result = {out_name: _shaped(problem, out_name, out)}
    for name, value in (("mean", mean), ("rstd", rstd)):
        if _declared(problem, name):
            result[name] = _row_statistic(problem, name, value)
    return result


def outputs_layernorm(problem):
    return (_main_out(problem, STATISTICS),) + tuple(n for n in STATISTICS if _declared(problem, n))


def roundings_rmsnorm(problem, name=None) -> int:
    """Llama's RMSNorm (Hugging Face's, and Liger's default casting mode) rounds x * rstd to
    x's dtype before the product with w: two roundings of a narrow output (rstd: one)."""
    main = _main_out(problem, ADD_NORM_OUTPUTS)
    if name not in (None, main):
        return 1
    return 2 if narrow_output(problem, main) else 1


def roundings_add_rmsnorm(problem, name=None) -> int:
    """The stored sum s = x + r is rounded to x's dtype before the norm reads it (its
    rounding is relative to s_i, so to y_i), then as rmsnorm; s and rstd: one."""
    main = _main_out(problem, ADD_NORM_OUTPUTS)
    if name not in (None, main):
        return 1
    return roundings_rmsnorm(problem) + (1 if narrow_output(problem, "x") else 0)


# Roundings of exp's argument, relative to |x_i - max| (x - max, the product with log2(e),
# log2(e)'s own float32 rounding, one spare), and the fixed roundings of out_i (exp's own
# error of up to 2 ulp for e_i and for the normaliser's weighted mean, the division or
# reciprocal and product, one spare).
SOFTMAX_ARGUMENT_ROUNDINGS = 4


SOFTMAX_FIXED_ROUNDINGS = 6


def _softmax_parts(problem, x):
    x = x.reshape(-1, x.shape[-1])
    xp = array_namespace(x)
    with np.errstate(over="ignore", invalid="ignore"):
        dist = row_max(x) - x
        e = xp.exp(-dist)
        out = e / e.sum(axis=-1, keepdims=True)
        weighted = xp.where(out > 0, out * dist, 0.0)
    return out, xp.where(out > 0, dist, 0.0), weighted.sum(axis=-1, keepdims=True)


def scale_softmax(inputs, problem):
    """The normaliser's n-term sum, and with online softmax up to n rescalings of it, each
    a relative error of out_i: S = 2 out_i."""
    (x,) = _inputs_of(problem, inputs, "x")
    out, _, _ = _softmax_parts(problem, x)
    return {_out_name(problem): _shaped(problem, _out_name(problem), 2.0 * array_namespace(out).nan_to_num(out))}


def pointwise_softmax(inputs, problem, reference):
    """exp turns its argument's roundoff (relative to |x_i - max|) into a relative error of
    e_i; the normaliser carries the out-weighted mean of those. Not multiplied by any
    accumulation margin: a few roundings, whatever the row length."""
    (x,) = _inputs_of(problem, inputs, "x")
    out, dist, spread = _softmax_parts(problem, x)
    with np.errstate(over="ignore", invalid="ignore"):
        scale = out * (SOFTMAX_ARGUMENT_ROUNDINGS * (dist + spread) + SOFTMAX_FIXED_ROUNDINGS)
    scale = array_namespace(scale).nan_to_num(scale, posinf=math.inf)
    return {_out_name(problem): _shaped(problem, _out_name(problem), scale)}


# A norm's fixed roundings of out_i: the mean's division, + eps, (r)sqrt (up to 2 ulp), the
# products with rstd and w (and + b), one spare.
NORM_FIXED_ROUNDINGS = 6


def _accumulator_roundoff(problem) -> float:
    p = problem.params
    return bound_terms(problem.buffer(_main_out(problem, ADD_NORM_OUTPUTS)).dtype, _last_dim(problem),
                       str(p.get("accumulator") or ""), str(p.get("math_input") or "")).u_acc


def _biased_rows(problem, x, centre: bool) -> tuple:
    """(per row (rows x 1, boolean) whether its sum of squares (of deviations, with
    ``centre``) may round with one sign (biased_sums), gamma(n) / (2 u_acc)): a scale's
    worst case on such rows is ``magnitude * biased * half``, in that order, so a torch
    boolean meets the float64 magnitude first (bool * float would be float32); numpy or
    torch as ``x``."""
    rows = _rows(x, problem)
    u_acc = _accumulator_roundoff(problem)
    return biased_sum_of_squares(rows, u_acc, centre).reshape(-1, 1), half_worst_case(rows.shape[-1], u_acc)


def _rstd_pointwise(problem, reference, biased_rows: tuple) -> dict:
    """rstd, when declared: the same relative error as the output's scale (the mean of
    squares, + eps, the square root), the fixed roundings and a biased row's worst case
    (``biased_rows``: the output's ``_biased_rows``)."""
    if "rstd" not in reference:
        return {}
    magnitude = abs(reference["rstd"]).reshape(-1, 1)
    biased, half = biased_rows
    scale = NORM_FIXED_ROUNDINGS * magnitude + magnitude * biased * half
    if problem.op == "add_rmsnorm":  # the norm reads s rounded to x's dtype: one rounding of it
        scale = scale + magnitude * (_fmt(problem.buffer("x").dtype).unit_roundoff / _accumulator_roundoff(problem))
    return {"rstd": scale.reshape(reference["rstd"].shape)}


def pointwise_rmsnorm(inputs, problem, reference):
    """The fixed roundings, and on rows whose squares leave few residues below the
    accumulator's ulp (biased roundings) the sum's worst case halved by the square root."""
    out = _main_out(problem, ADD_NORM_OUTPUTS)
    if problem.op == "add_rmsnorm":
        x, r = _inputs_of(problem, inputs, "x", "r")
        x = x + r
    else:
        (x,) = _inputs_of(problem, inputs, "x")
    magnitude = abs(reference[out])
    found = _biased_rows(problem, x, centre=False)  # one sort of every row, for out and rstd
    biased = (magnitude.reshape(_rows(x, problem).shape) * found[0] * found[1]).reshape(magnitude.shape)
    result = {out: NORM_FIXED_ROUNDINGS * magnitude + biased, **_rstd_pointwise(problem, reference, found)}
    if "s" in reference:  # x + r rounded once: no pointwise term beyond |s|'s own rounding
        result["s"] = 0.0 * reference["s"]
    return result


def scale_add_rmsnorm(inputs, problem):
    """y and rstd: every error is relative (as rmsnorm); s = x + r: |x| + |r| for the one add
    (a float32 add of narrow values is exact before the store's rounding)."""
    x, r = _inputs_of(problem, inputs, "x", "r")
    reference = ref_add_rmsnorm(inputs, problem)
    scale = {k: abs(v) for k, v in reference.items()}
    if "s" in scale:
        scale["s"] = (abs(x) + abs(r)).reshape(problem.buffer("s").shape)
    return scale


def pointwise_layernorm(inputs, problem, reference):
    """The fixed roundings of the scale, and on rows whose squared deviations leave few
    residues below the accumulator's ulp the variance's worst case halved by the square
    root, on the centred part of the scale."""
    out = _main_out(problem, STATISTICS)
    (x,) = _inputs_of(problem, inputs, "x")
    centred, shift, w, b = _layernorm_parts(inputs, problem)
    scale = (centred + shift) * abs(w) + abs(b)
    found = _biased_rows(problem, x, centre=True)  # one sort of every row, for out and rstd
    biased = centred * abs(w) * found[0] * found[1]
    result = {out: _shaped(problem, out, NORM_FIXED_ROUNDINGS * scale + biased),
              **_rstd_pointwise(problem, reference, found)}
    if "mean" in reference:  # the division by n
        result["mean"] = abs(reference["mean"])
    return result


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
    relative; both are divided by the row's standard deviation. The statistics: mean, the
    mean of |x| (its sum's terms); rstd, relative (|rstd|), as the variance's error is."""
    centred, shift, w, b = _layernorm_parts(inputs, problem)
    scale = (centred + shift) * abs(w) + abs(b)
    out = _main_out(problem, STATISTICS)
    result = {out: _shaped(problem, out, scale)}
    if _declared(problem, "mean") or _declared(problem, "rstd"):
        x2 = _rows(inputs["x"], problem)
        eps = float(problem.params.get("eps", 1e-5))
        if _declared(problem, "mean"):
            result["mean"] = _row_statistic(problem, "mean", abs(x2).mean(axis=-1, keepdims=True))
        if _declared(problem, "rstd"):
            var = ((x2 - x2.mean(axis=-1, keepdims=True)) ** 2).mean(axis=-1, keepdims=True)
            with np.errstate(divide="ignore"):
                result["rstd"] = _row_statistic(problem, "rstd", 1.0 / array_namespace(var).sqrt(var + eps))
    return result


def range_softmax(problem, buffer):
    # x - max(x) must stay finite in float32, where kernels compute it
    return _fmt(buffer.dtype).tiny, min(_fmt(buffer.dtype).max_finite, FORMATS["float32"].max_finite) / 4


def range_norm(problem, buffer):
    """x: the float32 sum of squares of a row must not overflow, and squares stay normal;
    w, b: the output (up to sqrt(N) * |w|) must fit the output dtype."""
    n = _last_dim(problem)
    f32 = FORMATS["float32"]
    if buffer.name in ("x", "r"):  # r: add_rmsnorm's residual, summed with x before the norm
        return max(_fmt(buffer.dtype).tiny, math.sqrt(f32.tiny)), math.sqrt(f32.max_finite / n) / 4
    out = problem.buffer(_main_out(problem, ADD_NORM_OUTPUTS)).dtype
    return _fmt(buffer.dtype).tiny, _fmt(out).max_finite / (4 * math.sqrt(n))


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
           pointwise_text="out_i (4 (|x_i - max x| + sum_j out_j |x_j - max x|) + 6)",
           sizes="rows", canonical_rows=(("x",), frozenset()), array_api=True),
    OpSpec("rmsnorm", ref_rmsnorm, _last_dim, "x / rms(x) * (offset + w) per row; optional output rstd",
           None, range_norm, "|out_i| (every error is relative; rstd: |rstd|), n = row length",
           pointwise_scale=pointwise_rmsnorm, stress=stress_rows("NORM"), coverage=coverage_norm,
           pointwise_text="6 |out_i|, + gamma(n) / (2 u_acc) |out_i| on rows of biased roundings",
           outputs=outputs_rmsnorm, roundings=roundings_rmsnorm,
           sizes="rows", canonical_rows=(("x", "w"), frozenset({"eps"})), array_api=True),
    OpSpec("layernorm", ref_layernorm, _last_dim, "(x - mean) / std * w + b per row; optional outputs "
           "mean and rstd", scale_layernorm, range_norm,
           "(|x_i - mean| + |x_i| + mean|x|) / std * |w_i| + |b_i|; mean: mean|x|; rstd: |rstd|; n = row length",
           pointwise_scale=pointwise_layernorm, stress=stress_rows("NORM"), coverage=coverage_norm,
           pointwise_text="6 S_i, + gamma(n) / (2 u_acc) |x_i - mean| / std |w_i| on rows of biased roundings",
           outputs=outputs_layernorm, sizes="rows", canonical_rows=(("x", "w", "b"), frozenset({"eps"})),
           array_api=True),
    OpSpec("add_rmsnorm", ref_add_rmsnorm, _last_dim, "s = x + r; y = s / rms(s) * (offset + w) per row; "
           "optional outputs s and rstd", scale_add_rmsnorm, range_norm,
           "|y_i| and |rstd| (relative); s: |x_i| + |r_i|; n = row length",
           pointwise_scale=pointwise_rmsnorm, stress=stress_rows("NORM", ("x", "r")), coverage=coverage_norm,
           pointwise_text="as rmsnorm, on s", outputs=outputs_add_rmsnorm, roundings=roundings_add_rmsnorm,
           array_api=True),
    OpSpec("row_sum", ref_row_sum, _last_dim, "out[i] = sum_j x[i, j]", scale_row_sum, range_sum,
           "sum_j |x[i, j]|, n = row length", range_int_sum(_last_dim), stress=stress_rows("ROW_SUM"),
           coverage=coverage_row_sum),
]
