"""Rows whose float sums may round with one sign: where the random-walk accumulation term of
the error bound (numerics.accumulation_coefficient) does not hold.

The probabilistic term C_ACC sqrt(n) u_acc assumes the roundings of a reduction's partial
sums have mean zero. That needs the low-order bits of the terms, the part below the ulp of
the partial sums, to take many values. When the terms carry few significant bits (float16
subnormals: their squares are multiples of 2^-48) or take few distinct values (a row of
near-equal values), the residues of the terms modulo the accumulator's ulp at the row's sum
fall into a few classes, every addition of one class rounds the same way, and a serial sum
drifts by up to n/2 ulps. Such rows get the worst case instead (docs/verification.md,
"Error model").

The functions take numpy arrays or torch tensors (the classification runs on the host) and
give back the same kind.
"""
from __future__ import annotations

import math

import numpy as np

# Fewer distinct nonzero residues than this (2^6) and the roundings of a row may all have
# one sign. Rows of ordinary data have hundreds (float16 normal values at n = 4096: about
# n/4); zero means every term is a multiple of the ulp, so every partial sum is exact.
RESIDUE_CLASSES = 64
# Distinct residues are first counted on this many leading terms of each row: a row that
# already has RESIDUE_CLASSES there needs no sort of its full length.
PREFIX_TERMS = 1024


def _host(values) -> np.ndarray:
    if hasattr(values, "detach"):  # a torch tensor
        return values.detach().to("cpu").double().numpy()
    return np.asarray(values, dtype=np.float64)


def _like(mask: np.ndarray, template):
    if hasattr(template, "detach"):
        import torch
        return torch.from_numpy(np.ascontiguousarray(mask)).to(template.device)
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


def residue_class_counts(terms, u_acc: float, limit: int = RESIDUE_CLASSES) -> np.ndarray:
    """Per row of nonnegative ``terms`` (rows x n, float64 and exact), the number of
    distinct nonzero residues of the terms modulo the accumulator's ulp at the row's sum,
    capped at ``limit``; 0 for rows whose sum is 0 or not finite."""
    terms = _host(terms)
    total = terms.sum(axis=-1)
    usable = np.isfinite(total) & (total > 0)
    counts = np.zeros(terms.shape[0], dtype=np.int64)
    if not usable.any():
        return counts
    rows = terms[usable]
    residues = np.fmod(rows, accumulator_ulp(total[usable], u_acc)[:, None])
    found = _distinct_nonzero(residues[:, :PREFIX_TERMS], limit)
    undecided = found < limit
    if residues.shape[-1] > PREFIX_TERMS and undecided.any():
        found[undecided] = _distinct_nonzero(residues[undecided], limit)
    counts[usable] = found
    return counts


def biased_rows(terms, u_acc: float):
    """Per row, whether the roundings of a float sum of ``terms`` (rows x n, nonnegative)
    may be biased: between 1 and RESIDUE_CLASSES - 1 distinct nonzero residues. Same kind
    (numpy or torch, and device) as ``terms``."""
    counts = residue_class_counts(terms, u_acc)
    return _like((counts > 0) & (counts < RESIDUE_CLASSES), terms)


def biased_sum_of_squares(rows, u_acc: float, centre: bool = False):
    """biased_rows for the sum of squares of ``rows`` (rows x n), or with ``centre`` of their
    deviations from the row mean (a layernorm's variance; the mean as the accumulator holds
    it: any one value shared by the row keeps the residues of equal elements equal)."""
    values = _host(rows)
    if centre:
        with np.errstate(invalid="ignore", over="ignore"):
            values = values - round_to_accumulator(values.mean(axis=-1, keepdims=True), u_acc)
    with np.errstate(invalid="ignore", over="ignore"):
        counts = residue_class_counts(values * values, u_acc)
    return _like((counts > 0) & (counts < RESIDUE_CLASSES), rows)


def half_worst_case(n: int, u_acc: float) -> float:
    """gamma(n) / (2 u_acc): the worst-case relative error of an n-term sum, halved by the
    square root a norm takes of it, in units of u_acc (the pointwise scale's coefficient)."""
    n = max(1, int(n))
    if n * u_acc >= 0.5:
        return math.inf
    return n / (2.0 * (1.0 - n * u_acc))
