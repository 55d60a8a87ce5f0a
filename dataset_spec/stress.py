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


def p_wide(c, m, n):
    magnitude = np.exp(c.rng.uniform(math.log(c.lo), math.log(c.hi), (m, n)))
    return np.where(c.rng.random((m, n)) < 0.5, -magnitude, magnitude)


def p_top(c, m, n):
    return np.where(c.rng.random((m, n)) < 0.5, -c.hi, c.hi) * np.ones((m, n))


SOFTMAX = (p_negative, p_masked, p_max_last, p_constant, p_large_offset, p_large_spread, p_increasing,
           p_nan_one, p_normal)
NORM = (p_zero, p_tiny, p_near_eps, p_large_mean, p_big, p_one_hot, p_constant, p_nan_one, p_normal)
# a GEMM's A rows against B's columns: constant rows of A meet alternating columns of B
# (exact cancellation with a large magnitude scale), tail-heavy meets tail-heavy
GEMM_A = (p_tail_heavy, p_constant, p_wide, p_nan_one, p_normal)
GEMM_B = (p_tail_heavy, p_alternating, p_wide, p_normal)
PRODUCTS = (p_tail_heavy, p_alternating, p_wide, p_normal)
ROW_SUM = (p_alternating, p_tail_heavy, p_wide, p_nan_one, p_inf_one, p_constant, p_normal)
# ops whose domain must hold (no max subtraction, float16 intermediates): in-domain rows only
GENERIC = (p_constant, p_alternating, p_one_hot, p_wide, p_normal)


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


def row_stress(patterns, shape, context: StressContext, axis: int = -1) -> np.ndarray:
    """Patterns along ``axis`` of ``shape`` (the reduction axis): rows are every other index."""
    shape = tuple(int(s) for s in shape)
    if not shape:
        return rows_by_pattern(patterns, 1, 1, context).reshape(())
    moved = list(shape)
    length = moved.pop(axis)
    rows = int(np.prod(moved, dtype=np.int64))
    values = rows_by_pattern(patterns, rows, length, context).reshape(tuple(moved) + (length,))
    return clip_finite(np.moveaxis(values, -1, axis), context.hi)


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


def integer_stress(shape, rng: np.random.Generator, low: int, high: int) -> np.ndarray:
    """Integers in [low, high): rows all at the top, all at the bottom, alternating top and
    bottom, then elements that are an extreme half the time (uniform otherwise)."""
    shape = tuple(shape)
    length = shape[-1] if shape else 1
    rows = int(np.prod(shape[:-1], dtype=np.int64)) if len(shape) > 1 else 1
    top, bottom = high - 1, low
    out = np.where(rng.random((rows, length)) < 0.5,
                   np.where(rng.random((rows, length)) < 0.5, top, bottom),
                   rng.integers(low, high, (rows, length)))
    if len(shape) > 1:
        patterns = [np.full(length, top), np.full(length, bottom),
                    np.where(np.arange(length) % 2 == 0, top, bottom)]
        for index, pattern in enumerate(patterns[:rows]):
            out[index] = pattern
    return out.astype(np.float64).reshape(shape)
