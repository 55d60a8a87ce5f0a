"""Rows whose float sums may round with one sign: where the random-walk accumulation term of
the error bound (numerics.accumulation_coefficient) does not hold.

The probabilistic term C_ACC sqrt(n) u_acc assumes the roundings of a reduction's partial
sums have mean zero. That needs the low-order bits of the terms, the part below the ulp of
the partial sums, to take many values. When the terms carry few significant bits (float16
subnormals: their squares are multiples of 2^-48) or repeat a few values (near-equal
values, an edge trial's repeated +-hi among small ones), the residues of the terms modulo
the accumulator's ulp at the row's sum fall into a few classes, every addition of one
class rounds the same way, and a serial sum drifts by up to n/2 ulps. Such rows get the
worst case instead (docs/verification.md, "Error model"). Squares are taken in float64,
exact for values of up to 26 significant bits (every storage dtype but float64).

The functions take numpy arrays or torch tensors (the classification runs on the host) and
give back the same kind.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..numerics import C_ACC

# Fewer distinct nonzero residues than this (2^6), each repeated, and the roundings of a row
# may all have one sign. Rows of ordinary data have hundreds (float16 normal values at
# n = 4096: about n/4; float32 values: one per term); none means every term is a multiple
# of the ulp, so every partial sum is exact.
RESIDUE_CLASSES = 64
# Distinct residues are first counted on this many leading terms of each row: a row that
# already has RESIDUE_CLASSES there needs no sort of its full length.
PREFIX_TERMS = 256
# One residue class whose roundings drift past this many sqrt(n) u_acc of the row's sum by
# themselves, and the row's roundings may lean one way: C_ACC, the random-walk term's own
# margin, which that one class would use up. Ordinary rows stay well below: float32 values
# about 1 (one term a class), float16 values 2 to 86 at n = 4096 against 128, 12 to 330 at
# n = 65,536 against 512.
HEAVY_DRIFT = C_ACC


def _host(values) -> np.ndarray:
    if hasattr(values, "detach"):  # a torch tensor
        return values.detach().to("cpu").double().numpy()
    return np.asarray(values, dtype=np.float64)


def _like(mask: np.ndarray, template):
    if hasattr(template, "detach"):  # a boolean tensor on the template's device
        return template.new_tensor(mask.astype(np.float64)) != 0
    return mask


def accumulator_ulp(total: np.ndarray, u_acc: float) -> np.ndarray:
    """The spacing of an accumulator of unit roundoff ``u_acc`` at ``total`` (> 0)."""
    _, exponent = np.frexp(total)
    return np.ldexp(u_acc, exponent)


def round_to_accumulator(values: np.ndarray, u_acc: float) -> np.ndarray:
    """``values`` rounded to nearest in an accumulator of unit roundoff ``u_acc``."""
    bits = int(round(-math.log2(u_acc)))
    mantissa, exponent = np.frexp(values)
    return np.ldexp(np.round(np.ldexp(mantissa, bits)), exponent - bits)


def _distinct_nonzero(residues: np.ndarray, limit: int) -> np.ndarray:
    """Per row, the number of distinct nonzero values, capped at ``limit``."""
    if residues.shape[-1] == 0:
        return np.zeros(residues.shape[0], dtype=np.int64)
    ordered = np.sort(residues, axis=-1)
    new = np.ones(ordered.shape, dtype=bool)
    new[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    return np.minimum((new & (ordered != 0)).sum(axis=-1), limit)


@dataclass(frozen=True)
class ResidueClasses:
    """Per row: ``classes``, the distinct nonzero residues of the terms modulo the
    accumulator's ulp at the row's sum (capped at RESIDUE_CLASSES), and ``terms``, how
    many terms leave a nonzero one. Terms below half that ulp are left out: added to a
    partial sum at the row's total they vanish whole, whatever their low bits."""
    classes: np.ndarray
    terms: np.ndarray

    @property
    def biased(self) -> np.ndarray:
        """Few classes, each taken twice or more on average: the roundings may all have one
        sign. All-distinct residues are the random walk's own assumption; no nonzero
        residue means every partial sum is exact."""
        few = (self.classes > 0) & (self.classes < RESIDUE_CLASSES)
        return few & (2 * self.classes <= self.terms)


def _residues(terms: np.ndarray, ulp: np.ndarray) -> np.ndarray:
    """Residues modulo ``ulp`` (a column) of the terms of at least half of it, else 0."""
    return np.where(terms >= ulp / 2, np.fmod(terms, ulp), 0.0)


def residue_classes(terms, u_acc: float) -> ResidueClasses:
    """ResidueClasses of nonnegative ``terms`` (rows x n, float64, exact), for a sum in an
    accumulator of unit roundoff ``u_acc``; no classes where a row's sum is 0 or not finite.
    Rows with RESIDUE_CLASSES among their first PREFIX_TERMS terms are not read further
    (their ``terms`` count is then n)."""
    terms = _host(terms)
    rows, n = terms.shape
    total = terms.sum(axis=-1)
    usable = np.isfinite(total) & (total > 0)
    ulp = accumulator_ulp(np.where(usable, total, 1.0), u_acc)[:, None]
    classes = _distinct_nonzero(_residues(terms[:, :PREFIX_TERMS], ulp), RESIDUE_CLASSES)
    counted = np.full(rows, n, dtype=np.int64)
    unsure = np.flatnonzero(usable & (classes < RESIDUE_CLASSES))
    if unsure.size:
        residues = _residues(terms[unsure], ulp[unsure])
        classes[unsure] = _distinct_nonzero(residues, RESIDUE_CLASSES)
        counted[unsure] = (residues != 0).sum(axis=-1)
    return ResidueClasses(np.where(usable, classes, 0), np.where(usable, counted, 0))


def _squares(rows, u_acc: float, centre: bool) -> np.ndarray:
    """The squares of ``rows`` (float64, exact), or with ``centre`` of their deviations
    from the row mean (a layernorm's variance; the mean and the deviations as the
    accumulator holds them: small elements beside a large mean all give the same
    deviation)."""
    values = _host(rows)
    with np.errstate(invalid="ignore", over="ignore"):
        if centre:
            mean = round_to_accumulator(values.mean(axis=-1, keepdims=True), u_acc)
            values = round_to_accumulator(values - mean, u_acc)
        return values * values


def _runs(ordered: np.ndarray) -> np.ndarray:
    """For sorted rows, each element's run id (equal neighbours share one), unique over
    the whole array, so np.bincount counts every run of every row at once."""
    rows, n = ordered.shape
    new = np.ones(ordered.shape, dtype=bool)
    new[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    return np.cumsum(new, axis=-1) - 1 + n * np.arange(rows)[:, None]


def heavy_class_drift(terms, u_acc: float) -> np.ndarray:
    """Per row of nonnegative ``terms`` (rows x n, float64, exact), the largest drift of one
    residue class: over the distinct nonzero residues of the terms modulo the accumulator's
    ulp at the row's sum, how many terms leave it times its distance to the nearest
    multiple of that ulp, in units of u_acc times the sum; 0 where the sum is 0 or not
    finite.

    Terms of one residue round alike, by that distance and with one sign, whenever they
    are added to a partial sum of the row's size. Terms below half the ulp are counted
    here too: their residue is the term itself, and each vanishes whole. A class's
    roundings are no random walk but a drift of up to this much; a row whose magnitudes
    span many binades can put most of its terms in one class, as a layernorm row of the
    wide trial does, whose thousands of small elements all give the deviation -mean beside
    a few huge ones (at n = 4096 such a row's variance drifted 946 u_acc, 7 times the
    C_ACC sqrt(n) its random-walk term allows). Rows are sorted a block at a time, so the
    scratch stays bounded on long rows."""
    terms = _host(terms)
    rows, n = terms.shape
    drift = np.zeros(rows)
    if n == 0:
        return drift
    with np.errstate(invalid="ignore", over="ignore"):
        total = terms.sum(axis=-1)
        usable = np.isfinite(total) & (total > 0)
        ulp = accumulator_ulp(np.where(usable, total, 1.0), u_acc)[:, None]
        step = max(1, (1 << 22) // n)
        for first in range(0, rows, step):
            block = slice(first, first + step)
            ordered = np.sort(np.fmod(terms[block], ulp[block]), axis=-1)
            distance = np.minimum(ordered, ulp[block] - ordered)
            runs = _runs(ordered)
            live = (ordered != 0) & np.isfinite(ordered)
            counts = np.bincount(runs[live], minlength=ordered.size).reshape(ordered.shape)
            drift[block] = np.where(live, counts.reshape(-1)[runs] * distance, 0.0).max(axis=-1)
        return np.where(usable, drift / (u_acc * np.where(usable, total, 1.0)), 0.0)


def biased_sum_of_squares(rows, u_acc: float, centre: bool = False):
    """Per row of ``rows`` (rows x n), whether a float sum of their squares, or with
    ``centre`` of their deviations from the row mean, may round with one sign: few residue
    classes (``ResidueClasses.biased``), or one class whose drift alone is past
    HEAVY_DRIFT sqrt(n) u_acc of the sum (``heavy_class_drift``). Same kind (numpy or
    torch, and device) as ``rows``."""
    with np.errstate(invalid="ignore", over="ignore"):
        squares = _squares(rows, u_acc, centre)
        found = residue_classes(squares, u_acc).biased
        heavy = heavy_class_drift(squares, u_acc) > HEAVY_DRIFT * math.sqrt(squares.shape[-1])
    return _like(found | heavy, rows)


def half_worst_case(n: int, u_acc: float) -> float:
    """gamma(n) / (2 u_acc): the worst-case relative error of an n-term sum, halved by the
    square root a norm takes of it, in units of u_acc (the pointwise scale's coefficient)."""
    n = max(1, int(n))
    if n * u_acc >= 0.5:
        return math.inf
    return n / (2.0 * (1.0 - n * u_acc))
