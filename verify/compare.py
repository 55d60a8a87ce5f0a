"""Numerical checks: error against the float64 reference, tolerance, trivial references,
agreement between members.

The tolerance rule is elementwise ``|out - ref| <= atol + rtol * |ref|``. Non-finite
outputs fail wherever the reference is finite; where the reference itself is non-finite
the output must match it (same infinity, or NaN).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

AGREEMENT_FACTOR = 2.0  # members are compared to each other with twice the tolerance


@dataclass
class ErrorStats:
    max_abs_err: float
    max_rel_err: float
    n_bad: int          # elements outside the tolerance
    n_total: int
    worst_index: tuple  # where the largest violation is (for the message), () if none

    @property
    def ok(self) -> bool:
        return self.n_bad == 0


def error_stats(out: np.ndarray, ref: np.ndarray, atol: float, rtol: float) -> ErrorStats:
    """Errors of ``out`` against ``ref`` (both float64, same shape) and the tolerance check.

    Relative error divides by ``max(|ref|, atol)`` so elements near zero do not report huge
    relative errors that the tolerance (which allows atol there) never cared about.
    """
    out = np.asarray(out, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if out.shape != ref.shape:
        raise ValueError(f"output shape {out.shape} != reference shape {ref.shape}")
    ref_finite = np.isfinite(ref)
    out_finite = np.isfinite(out)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(out - ref)
    both = ref_finite & out_finite
    # Non-finite where the reference is finite: an infinite error.
    abs_err = np.where(both, diff, np.where(ref_finite, np.inf, 0.0))
    # Where the reference is non-finite the output must be the same non-finite value.
    same_nonfinite = (~ref_finite) & ((np.isnan(ref) & np.isnan(out)) | (ref == out))
    abs_err = np.where(~ref_finite & ~same_nonfinite, np.inf, abs_err)
    floor = max(float(atol), np.finfo(np.float64).tiny)
    with np.errstate(invalid="ignore"):
        rel_err = abs_err / np.maximum(np.abs(np.where(ref_finite, ref, 0.0)), floor)
        limit = atol + rtol * np.abs(np.where(ref_finite, ref, 0.0))
        excess = abs_err - limit
    bad = excess > 0
    n_bad = int(np.count_nonzero(bad))
    worst = tuple(int(i) for i in np.unravel_index(int(np.argmax(excess)), excess.shape)) if n_bad and excess.size else ()
    return ErrorStats(
        max_abs_err=float(abs_err.max()) if abs_err.size else 0.0,
        max_rel_err=float(rel_err.max()) if rel_err.size else 0.0,
        n_bad=n_bad, n_total=int(out.size), worst_index=worst)


def within_tolerance(out: np.ndarray, ref: np.ndarray, atol: float, rtol: float) -> bool:
    return error_stats(out, ref, atol, rtol).ok


def trivial_reason(ref: np.ndarray, atol: float, rtol: float) -> str:
    """Why a reference is too weak to prove anything ('' when it is fine).

    Trivial means a kernel writing one constant would pass: all |ref| below atol, or all
    elements within the tolerance of one value. A one-element output is exempt from the
    constant test (a full reduction is a single number by nature).
    """
    ref = np.asarray(ref, dtype=np.float64)
    finite = ref[np.isfinite(ref)]
    if finite.size == 0:
        return "the reference has no finite element"
    peak = float(np.abs(finite).max())
    if peak <= atol:
        return f"max |reference| {peak:.3g} is within atol {atol:.3g}"
    if finite.size > 1:
        spread = float(finite.max() - finite.min())
        if spread <= 2 * atol + 2 * rtol * peak:
            return (f"the reference is near-constant (spread {spread:.3g} over {finite.size} "
                    f"elements, tolerance {atol + rtol * peak:.3g})")
    return ""


def agreement(out: np.ndarray, other: np.ndarray, atol: float, rtol: float) -> ErrorStats:
    """Compare a member's output with another member's (the group's first passing one)."""
    return error_stats(out, other, AGREEMENT_FACTOR * atol, AGREEMENT_FACTOR * rtol)
