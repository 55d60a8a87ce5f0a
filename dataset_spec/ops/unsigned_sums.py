"""Sparse operands for saturating unsigned outputs of unsigned products (u4 x u4 -> u4,
u8 x u8 -> u8): GEMMs and convolutions share them.

Unsigned operands sum only non-negative products; drawn uniformly, every output of an
n-term sum sits within a few percent of n E[x] E[w] (its spread shrinks as 1 / sqrt(n)),
so whatever alpha, the stored outputs are one or two values (a near-constant reference).
Such problems state ``params.operand_density``: each operand is drawn in every trial from
its ``init``, a normal clipped and rounded to the element range whose mean lies below 0, so
about that fraction of elements is nonzero (with values over the whole range) and a sum
holds about SPARSE_TERMS nonzero products. ``mid_range_alpha`` is the power of two that
brings the mean sum to the middle of the output's range (a power of two keeps
alpha * accumulator exact in a float32 epilogue).

Signed narrow outputs (int8, int4) of integer products with a float32 epilogue saturate too:
full-range operands make an n-term sum's standard deviation sqrt(n) times the operands' rms
product (1.2e5 for int8 at K = 528), so 97-100% of the outputs would be +-top and the check
little more than one of signs. Their operands keep the trials' full ranges (every product
bit is exercised) and ``spread_alpha`` is the power of two that brings that deviation to half
the output's top: about 5% of a uniform trial's outputs saturate.
"""
from __future__ import annotations

import math

from ..model import DTYPES, Distribution, Problem, dtype_kind
from ..packed import element_range, is_packed

SPARSE_TERMS = 16


def unsigned_top(dtype: str) -> int:
    """The largest value of an unsigned dtype (uint4: 15, uint8: 255)."""
    return element_range(dtype)[1] - 1 if is_packed(dtype) else (1 << 8 * DTYPES[dtype][0]) - 1


def is_unsigned_saturating(dtype_a: str, dtype_b: str, dtype_out: str) -> bool:
    """Unsigned operands and an unsigned integer output (project dtype names)."""
    return all(dtype_kind(d) == "u" for d in (dtype_a, dtype_b, dtype_out))


def signed_top(dtype: str) -> int:
    """The largest value of a signed dtype (int4: 7, int8: 127)."""
    return element_range(dtype)[1] - 1 if is_packed(dtype) else (1 << (8 * DTYPES[dtype][0] - 1)) - 1


def is_signed_saturating(dtype_a: str, dtype_b: str, dtype_out: str) -> bool:
    """Integer operands and a signed integer output narrower than the int32 accumulator."""
    narrow = is_packed(dtype_out) or DTYPES[dtype_out][0] < 4
    return all(dtype_kind(d) in ("i", "u") for d in (dtype_a, dtype_b)) and dtype_kind(dtype_out) == "i" and narrow


def spread_alpha(ranges, terms: int, dtype_out: str) -> float:
    """The power of two (at most 1) that brings the standard deviation of a ``terms``-term
    sum of products of two operands drawn uniformly over ``ranges`` ([low, high) each, the
    op's trial ranges) to half the top of ``dtype_out``."""
    rms = [math.sqrt(sum(v * v for v in range(int(low), int(high))) / max(1, int(high) - int(low)))
           for low, high in ranges]
    deviation = math.sqrt(max(1, terms)) * rms[0] * rms[1]
    return 2.0 ** -max(0, round(math.log2(max(deviation, 1e-300) / (signed_top(dtype_out) / 2))))


def operand_density(terms: int) -> float:
    """The nonzero fraction of each operand that leaves about SPARSE_TERMS nonzero
    products in a ``terms``-term sum."""
    return min(0.5, math.sqrt(SPARSE_TERMS / max(1, terms)))


def _normal_cdf(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def _normal_quantile(q: float) -> float:
    low, high = -12.0, 12.0
    for _ in range(100):
        mid = (low + high) / 2
        low, high = (mid, high) if _normal_cdf(mid) < q else (low, mid)
    return (low + high) / 2


def sparse_unsigned_init(density: float, top: int) -> Distribution:
    """The ``init`` of an unsigned operand with ``density`` nonzero elements: normal, std
    top / 2, mean such that P(value >= 0.5) = density; storage rounds and clips it to
    [0, top]."""
    std = top / 2.0
    return Distribution("normal", {"mean": 0.5 - std * _normal_quantile(1.0 - density), "std": std})


def stored_moments(init: Distribution, top: int) -> tuple:
    """(E[v], E[v^2]) of the stored values of ``init`` (rounded and clipped to [0, top])."""
    mean, std = float(init.params["mean"]), float(init.params["std"])
    edges = [_normal_cdf((k + 0.5 - mean) / std) for k in range(top)]
    probs = [edges[0]] + [b - a for a, b in zip(edges, edges[1:])] + [1.0 - edges[-1]]
    return sum(k * p for k, p in enumerate(probs)), sum(k * k * p for k, p in enumerate(probs))


def sparsify(problem: Problem, operands, terms: int) -> Problem:
    """Give ``problem``'s two unsigned ``operands`` sparse inits for a ``terms``-term sum
    and state ``params.operand_density`` (the trials then draw them from their init)."""
    density = operand_density(terms)
    problem.params["operand_density"] = density
    for name in operands:
        buffer = problem.buffer(name)
        buffer.init = sparse_unsigned_init(density, unsigned_top(buffer.dtype))
    return problem


def mid_range_alpha(problem: Problem, operands, out: str, terms: int) -> float:
    """The power of two (at most 1) that brings the mean sparse sum of ``problem`` (already
    ``sparsify``-ed) to the middle of ``out``'s range."""
    means = [stored_moments(problem.buffer(name).init, unsigned_top(problem.buffer(name).dtype))[0]
             for name in operands]
    mean_sum = terms * means[0] * means[1]
    middle = unsigned_top(problem.buffer(out).dtype) / 2
    return 2.0 ** -max(0, round(math.log2(mean_sum / middle)))
