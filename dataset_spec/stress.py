"""Stress inputs: per op, the rows where classic kernel bugs live (the ``stress`` trial kind).

Each op names a list of row patterns per input buffer (``STRESS_PATTERNS``). Row r of a
buffer (its last axis, or the reduction axis for matrix operands) takes pattern
r % len(patterns), so every pattern appears in every stress trial once the buffer has as
many rows as there are patterns; elementwise ops assign patterns per element the same way.
All values are drawn from the trial's seeded generator and kept inside the op's domain
(lo, hi) unless the pattern is a deliberate NaN or infinity, which appear only where the
IEEE result is defined (the reference then carries the NaN or infinity, and the output
must match it exactly).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .numerics import FORMATS


@dataclass(frozen=True)
class StressContext:
    """What a pattern needs to draw one block of rows."""
    rng: np.random.Generator
    mean: float
    std: float
    lo: float
    hi: float
    dtype: str
    eps: float


def _spacing(value: float, dtype: str) -> float:
    """The distance between neighbouring values of ``dtype`` at ``value``."""
    fmt = FORMATS.get(dtype, FORMATS["float32"])
    return 2.0 * fmt.unit_roundoff * 2.0 ** math.floor(math.log2(max(abs(value), fmt.tiny)))


def _normal(c, m, n):
    return c.rng.normal(c.mean, max(c.std, 1e-30), (m, n))


def p_normal(c, m, n):
    return _normal(c, m, n)


def short_mantissa(values: np.ndarray, bits: int = 3) -> np.ndarray:
    """``values`` rounded to ``bits`` significant bits. Sums of equal such values (and of
    their squares) stay exact for 2^(24 - 2 bits) terms: a correct sequential sum is then
    exact, where a full-mantissa constant would round the same way at every step and drift
    by up to n/2 ulps, an error no kernel of another order makes."""
    mantissa, exponent = np.frexp(values)
    return np.ldexp(np.round(mantissa * 2.0 ** bits) / 2.0 ** bits, exponent)


def p_constant(c, m, n):
    return np.repeat(short_mantissa(c.rng.normal(c.mean, max(c.std, 1e-30), (m, 1))), n, axis=1)


def p_negative(c, m, n):
    return -(np.abs(c.rng.normal(0.0, 3.0, (m, n))) + 0.5)


def p_masked(c, m, n):
    """-inf at about half the positions; one position per row stays finite."""
    x = c.rng.normal(0.0, 2.0, (m, n))
    masked = c.rng.random((m, n)) < 0.5
    masked[np.arange(m), c.rng.integers(0, n, m)] = False
    return np.where(masked, -np.inf, x)


def p_max_last(c, m, n):
    x = c.rng.normal(0.0, 2.0, (m, n))
    x[:, -1] = x.max(axis=1) + 1.0 if n > 1 else x[:, -1]
    return x


def p_increasing(c, m, n):
    return np.sort(c.rng.normal(0.0, 3.0, (m, n)), axis=1)


def p_large_spread(c, m, n):
    return c.rng.normal(0.0, min(30.0, c.hi / 8), (m, n))


def p_large_offset(c, m, n):
    """Rows far from zero with a small spread: exp overflows unless the max is subtracted."""
    offset = min(1e4, c.hi / 8)
    spread = max(1.0, 4 * _spacing(offset, c.dtype))
    signs = np.where(c.rng.random((m, 1)) < 0.5, -1.0, 1.0)
    return signs * offset + c.rng.normal(0.0, spread, (m, n))


def p_nan_one(c, m, n):
    x = _normal(c, m, n)
    x[np.arange(m), c.rng.integers(0, n, m)] = np.nan
    return x


def p_inf_one(c, m, n):
    x = _normal(c, m, n)
    x[np.arange(m), c.rng.integers(0, n, m)] = np.inf
    return x


def p_half_zeros(c, m, n):
    """Exact zeros at half the positions: where the other operand holds an infinity, the
    product is 0 * inf = NaN, which a kernel that skips zero operands never produces."""
    x = _normal(c, m, n)
    x[c.rng.random((m, n)) < 0.5] = 0.0
    return x


def p_zero(c, m, n):
    return np.zeros((m, n))


def p_tiny(c, m, n):
    """mean(x^2) about 1e-4 eps: a norm without eps turns these rows into O(1) outputs."""
    return c.rng.normal(0.0, math.sqrt(c.eps) * 1e-2, (m, n))


def p_near_eps(c, m, n):
    return c.rng.normal(0.0, math.sqrt(c.eps), (m, n))


def p_large_mean(c, m, n):
    """|mean| / std of 4e3 where the dtype can hold such a spread (at least two of its
    spacings): one-pass variance E[x^2] - E[x]^2 cancels catastrophically here."""
    mean = min(4e3, c.hi / 4)
    spread = max(mean / 4e3, 2 * _spacing(mean, c.dtype))
    signs = np.where(c.rng.random((m, 1)) < 0.5, -1.0, 1.0)
    return signs * (mean + c.rng.normal(0.0, spread, (m, n)))


def p_big(c, m, n):
    return c.rng.normal(0.0, c.hi / 8, (m, n))


def p_one_hot(c, m, n):
    """One nonzero element per row: reductions over it are exact, so a kernel that mixes up
    elements or rows shows at once."""
    x = np.zeros((m, n))
    x[np.arange(m), c.rng.integers(0, n, m)] = c.rng.normal(c.mean, max(c.std, 1e-30), m) + 4 * max(c.std, 1e-30)
    return x


def p_alternating(c, m, n):
    """Pairs +v, -v along the row: the row's sum (and its dot with a constant) is zero."""
    v = np.abs(_normal(c, m, (n + 1) // 2)) + abs(c.std) * 0.1
    signs = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    return np.repeat(v, 2, axis=1)[:, :n] * signs


def p_tail_heavy(c, m, n):
    """Magnitudes grow along the row and the last 8 entries are the largest: a kernel that
    drops or mishandles the tail of the reduction changes the result visibly."""
    ramp = 2.0 ** (4.0 * np.arange(n) / max(1, n))
    ramp[-8:] *= 4.0
    return _normal(c, m, n) * ramp


def stratified_unit(rng: np.random.Generator, shape) -> np.ndarray:
    """Uniform [0, 1) values of ``shape``, one in each of n equal strata (n elements) at
    random positions: still uniform per element, but a log-uniform draw over B binades
    from them puts a value in every binade once n >= 2B, where an independent draw of
    that size misses several (the coverage record counts them, dataset_spec/coverage.py)."""
    n = int(np.prod(shape, dtype=np.int64))
    return ((rng.permutation(n) + rng.random(n)) / max(n, 1)).reshape(shape)


def log_uniform(rng: np.random.Generator, lo: float, hi: float, shape) -> np.ndarray:
    """Random sign, magnitude log-uniform over [lo, hi], stratified (``stratified_unit``)."""
    magnitude = np.exp(math.log(lo) + (math.log(hi) - math.log(lo)) * stratified_unit(rng, shape))
    return np.where(rng.random(shape) < 0.5, -magnitude, magnitude)


def p_wide(c, m, n):
    return log_uniform(c.rng, c.lo, c.hi, (m, n))


def p_lo_one_hot(c, m, n):
    """One element per row at the domain's bottom (lo to 2 lo, random sign), the rest 0:
    a GEMM output from such a row is lo |b|, below the output's smallest normal where b is
    small and lo is the operand's smallest normal (float16, FP8): a conversion that flushes
    subnormal results to zero fails there."""
    x = np.zeros((m, n))
    sign = np.where(c.rng.random(m) < 0.5, -1.0, 1.0)
    x[np.arange(m), c.rng.integers(0, n, m)] = sign * c.lo * (1.0 + c.rng.random(m))
    return x


def p_neg_inf_one(c, m, n):
    x = _normal(c, m, n)
    x[np.arange(m), c.rng.integers(0, n, m)] = -np.inf
    return x


# exp's range in float32: exp(x) underflows below -103.3 (2^-149) and overflows above 88.7;
# rows spread past EXP_RANGE make most of their exps 0 after the max is subtracted
EXP_RANGE = 104.0


def p_negative_spread(c, m, n):
    """All negative, spread over 4 EXP_RANGE below a maximum near -0.5 (or the domain's
    top, if smaller): after the max is subtracted most exps underflow to 0, and a kernel
    that clamps, skips or mis-scales underflowed terms shows."""
    spread = min(4 * EXP_RANGE, c.hi / 2)
    return -(0.5 + c.rng.uniform(0.0, spread, (m, n)))


def _max_at(c, m, n, column):
    x = c.rng.normal(0.0, 2.0, (m, n))
    if n > 1:
        others = np.delete(x, column % n, axis=1)
        x[:, column] = others.max(axis=1) + min(EXP_RANGE + 16.0, c.hi / 4)
    return x


def p_max_first_far(c, m, n):
    """The maximum in the first column, above the rest by more than exp's range: every
    other exp underflows, the output is one-hot (an online softmax that starts its running
    max at the first element never rescales; one that starts at 0 or -inf must)."""
    return _max_at(c, m, n, 0)


def p_max_last_far(c, m, n):
    """The maximum in the last column by more than exp's range: an online softmax
    rescales everything it summed to 0 at the very end."""
    return _max_at(c, m, n, -1)


def p_top(c, m, n):
    return np.where(c.rng.random((m, n)) < 0.5, -c.hi, c.hi) * np.ones((m, n))


SOFTMAX = (p_negative, p_masked, p_max_last, p_constant, p_large_offset, p_large_spread, p_increasing,
           p_nan_one, p_normal, p_negative_spread, p_max_first_far, p_max_last_far)
# +-inf rows: rmsnorm gives NaN at the infinity and 0 elsewhere (x * rsqrt(inf) = x * 0),
# layernorm NaN everywhere (x - inf, inf - inf): the reference computes both as IEEE does
NORM = (p_zero, p_tiny, p_near_eps, p_large_mean, p_big, p_one_hot, p_constant, p_nan_one, p_normal,
        p_inf_one, p_neg_inf_one)
# a GEMM's A rows against B's columns: constant rows of A meet alternating columns of B
# (exact cancellation with a large magnitude scale), tail-heavy meets tail-heavy; all-zero
# rows of A and columns of B (a kernel that skips storing the outputs of a zero row), and
# rows of A with one element at the domain's bottom (subnormal results)
GEMM_A = (p_tail_heavy, p_constant, p_wide, p_nan_one, p_half_zeros, p_normal, p_zero, p_lo_one_hot)
GEMM_B = (p_tail_heavy, p_alternating, p_wide, p_inf_one, p_normal, p_zero)
PRODUCTS = (p_tail_heavy, p_alternating, p_wide, p_normal)
# finite GEMM operands (3xTF32, integer outputs): the patterns above without NaN or infinity
GEMM_A_FINITE = tuple(p for p in GEMM_A if p is not p_nan_one)
GEMM_B_FINITE = tuple(p for p in GEMM_B if p is not p_inf_one)
ROW_SUM = (p_alternating, p_tail_heavy, p_wide, p_nan_one, p_inf_one, p_constant, p_normal)
# ops whose domain must hold (no max subtraction, float16 intermediates): in-domain rows only
GENERIC = (p_constant, p_alternating, p_one_hot, p_wide, p_normal)
# a problem whose function tests for infinities or NaN (``params.stress_specials``: T5's
# float16 overflow guard, isinf(x).any()) gets rows holding them too
GENERIC_SPECIALS = GENERIC + (p_inf_one, p_neg_inf_one, p_nan_one)


def rows_by_pattern(patterns, rows: int, length: int, context: StressContext) -> np.ndarray:
    """(rows, length) values, row r drawn by patterns[r % len(patterns)]."""
    out = np.empty((rows, length))
    for index, pattern in enumerate(patterns):
        picked = np.arange(index, rows, len(patterns))
        if picked.size:
            out[picked] = pattern(context, picked.size, length)
    return out


def clip_finite(values: np.ndarray, hi: float) -> np.ndarray:
    """Finite values clipped to [-hi, hi]; deliberate NaN and infinities are kept."""
    finite = np.isfinite(values)
    return np.where(finite, np.clip(np.where(finite, values, 0.0), -hi, hi), values)


def row_stress(patterns, shape, context: StressContext, axis: int = -1, segments: bool = False) -> np.ndarray:
    """Patterns along ``axis`` of ``shape`` (the reduction axis): rows are every other index.
    ``segments``: where there are fewer rows than patterns, each row is cut into one segment
    per pattern (for ops with no row structure, whose buffers are often flattened to 1-D:
    without it such a buffer is the first pattern alone, one constant). Ops whose rows are
    reduced keep whole-row patterns (an all-zero row is what tests a norm's eps)."""
    shape = tuple(int(s) for s in shape)
    if not shape:
        return rows_by_pattern(patterns, 1, 1, context).reshape(())
    moved = list(shape)
    length = moved.pop(axis)
    rows = int(np.prod(moved, dtype=np.int64))
    if segments and rows < len(patterns) and length >= len(patterns) * MIN_SEGMENT:
        values = segments_by_pattern(patterns, rows, length, context)
    else:
        values = rows_by_pattern(patterns, rows, length, context)
    values = values.reshape(tuple(moved) + (length,))
    return clip_finite(np.moveaxis(values, -1, axis), context.hi)


MIN_SEGMENT = 8


def segments_by_pattern(patterns, rows: int, length: int, context: StressContext) -> np.ndarray:
    """(rows, length) values for fewer rows than patterns (a flattened 1-D buffer is one
    row): each row is cut into len(patterns) segments, segment i of row r drawn by
    patterns[(r + i) % len(patterns)], so every pattern is drawn and no buffer is one
    constant."""
    out = np.empty((rows, length))
    for row in range(rows):
        for index, cut in enumerate(np.array_split(np.arange(length), len(patterns))):
            out[row, cut] = patterns[(row + index) % len(patterns)](context, 1, cut.size)[0]
    return out


def vector_add_stress(name: str, shape, context: StressContext, previous: dict) -> np.ndarray:
    """Element i takes case i % 9 of (x, y): exact cancellation, near cancellation, inf + y,
    inf + -inf (NaN), NaN + y, both at the domain's top, -0 + -0, subnormal-range sums,
    wide values. y is built from the x already drawn."""
    n = int(np.prod(shape, dtype=np.int64))
    case = np.arange(n) % 9
    rng, hi = context.rng, context.hi
    fmt = FORMATS.get(context.dtype, FORMATS["float32"])
    normal = rng.normal(context.mean, max(context.std, 1e-30), n)
    wide = p_wide(context, 1, n)[0]
    tiny = rng.uniform(-4.0, 4.0, n) * fmt.tiny
    sign = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    if name != "y" or "x" not in previous:
        cases = [normal, normal, np.full(n, np.inf), np.full(n, np.inf), np.full(n, np.nan), sign * hi,
                 np.full(n, -0.0), tiny, wide]
    else:
        x = np.asarray(previous["x"], dtype=np.float64).reshape(-1)
        near = -x * (1.0 + sign * 2.0 ** -8)
        cases = [-x, near, normal, np.full(n, -np.inf), normal, np.where(x > 0, hi, -hi), np.full(n, -0.0),
                 tiny, wide]
    out = np.choose(case, [np.asarray(c, dtype=np.float64) for c in cases])
    return clip_finite(out, hi).reshape(shape)


def square_stress(shape, context: StressContext) -> np.ndarray:
    n = int(np.prod(shape, dtype=np.int64))
    wide = p_wide(context, 1, n)[0]
    normal = context.rng.normal(context.mean, max(context.std, 1e-30), n)
    cases = [normal, np.full(n, np.nan), np.full(n, np.inf), np.full(n, -np.inf), np.full(n, -0.0),
             np.full(n, context.hi), np.full(n, -context.lo), wide]
    out = np.choose(np.arange(n) % len(cases), cases)
    return out.reshape(shape)


def zero_slice(values: np.ndarray, axis: int, index: int) -> np.ndarray:
    """``values`` with one index along ``axis`` set to 0 (a GEMM operand's all-zero column
    of A or row of B: one K index that contributes nothing to any output): ``index``, or
    the next one (cyclically) whose slice holds no deliberate NaN or infinity, so the
    stress rows keep every special they drew."""
    values = np.array(values, dtype=np.float64)
    length = values.shape[axis]
    if length > 2:  # short reductions keep every index: zeroing one would leave no pattern
        moved = np.moveaxis(values, axis, 0)
        finite = np.isfinite(moved.reshape(length, -1)).all(axis=1)
        choice = free_index(finite, index)
        if choice is not None:
            moved[choice] = 0.0
    return values


def free_index(finite, index: int):
    """The first index from ``index`` on (cyclically) where ``finite`` is true, or None."""
    length = len(finite)
    for step in range(length):
        if bool(finite[(index + step) % length]):
            return (index + step) % length
    return None


def k_slice(length: int, operand: str) -> int:
    """The K index zeroed in a stress operand: the middle of K for A, one after it for B,
    so each zero slice meets the other operand's data (never the tail-heavy last 8)."""
    return length // 2 + (1 if operand == "B" else 0)


def nonfinite_fill(shape) -> np.ndarray:
    """NaN, +inf and -inf in turn: an operand the reference never reads (C when beta = 0:
    BLAS and CUTLASS do not read C then, so 0 * C is never computed)."""
    n = int(np.prod(shape, dtype=np.int64))
    return np.array([np.nan, np.inf, -np.inf])[np.arange(n) % 3].reshape(shape)


def small_values(low: int, high: int) -> np.ndarray:
    """-1, 0, 1 where [low, high) holds them (unsigned ranges: 0, 1)."""
    return np.array([v for v in (-1, 0, 1) if low <= v < high] or [low], dtype=np.float64)


def integer_stress(shape, rng: np.random.Generator, low: int, high: int, axis: int = -1) -> np.ndarray:
    """Integers in [low, high): rows (along ``axis``, the reduction axis) all at the top,
    all at the bottom, alternating top and bottom, one-hot (a single 1, or -1, the rest
    0), small values (-1, 0, 1 in turn, shifted by one per row), then elements that are an
    extreme (both ends, the values next to them, 0, +-1) half the time, uniform otherwise.
    A one-hot row of A against a small-values column of B gives sums of -1, 0 and 1,
    which full-range operands almost never produce (a kernel that skips writing small
    results would pass)."""
    shape = tuple(shape)
    if len(shape) > 1:
        moved = tuple(np.moveaxis(np.empty(shape, dtype=np.int8), axis, -1).shape)
        return np.moveaxis(_integer_rows(moved, rng, low, high), -1, axis).copy()
    return _integer_rows(shape, rng, low, high)


def _integer_rows(shape, rng, low: int, high: int) -> np.ndarray:
    length = shape[-1] if shape else 1
    rows = int(np.prod(shape[:-1], dtype=np.int64)) if len(shape) > 1 else 1
    top, bottom = high - 1, low
    extremes = np.array(sorted({low, high - 1, min(low + 1, high - 1), max(high - 2, low)}
                               | {v for v in (0, -1, 1) if low <= v < high}), dtype=np.float64)
    out = np.where(rng.random((rows, length)) < 0.5,
                   extremes[rng.integers(0, extremes.size, (rows, length))],
                   rng.integers(low, high, (rows, length)))
    if len(shape) > 1:
        small = small_values(low, high)
        unit = 1.0 if high > 1 else float(low)
        patterns = [np.full(length, top), np.full(length, bottom),
                    np.where(np.arange(length) % 2 == 0, top, bottom)]
        for index, pattern in enumerate(patterns[:rows]):
            out[index] = pattern
        # rows 3..5 one-hot, 6..8 small values: several of each, so that a one-hot row
        # meets every shift of the small-values rows in a product
        for index in range(3, min(rows, 9)):
            if index < 6:
                row = np.zeros(length)
                row[index % length] = unit if index % 2 or low >= 0 else -unit
            else:
                row = small[(np.arange(length) + index) % small.size]
            out[index] = row
    return out.astype(np.float64).reshape(shape)
