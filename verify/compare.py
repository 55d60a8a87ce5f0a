"""Numerical checks: error against the float64 reference under the per-element bound,
trivial references, and agreement between members.

Every check takes a per-element ``bound`` array (``OpSpec.bounds``; docs/verification.md):
an element fails when ``|out - ref| > bound``. Non-finite outputs fail wherever the
reference is finite; where the reference itself is non-finite the output must match it
(same infinity, or NaN).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class ErrorStats:
    max_abs_err: float
    max_rel_err: float   # |err| / max(|ref|, bound): relative where |ref| is above the bound
    max_err_ratio: float  # max |err| / bound: <= 1 passes
    n_bad: int           # elements outside the bound
    n_total: int
    worst_index: tuple   # where the largest violation is (for the message), () if none

    @property
    def ok(self) -> bool:
        return self.n_bad == 0


def error_stats(out: np.ndarray, ref: np.ndarray, bound: np.ndarray) -> ErrorStats:
    """Errors of ``out`` against ``ref`` (float64, same shape) under the per-element ``bound``."""
    out = np.asarray(out, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    bound = np.broadcast_to(np.asarray(bound, dtype=np.float64), ref.shape)
    if out.shape != ref.shape:
        raise ValueError(f"output shape {out.shape} != reference shape {ref.shape}")
    with np.errstate(invalid="ignore", over="ignore"):
        abs_err = np.abs(out - ref)
    if np.isfinite(abs_err).all():  # the common case: no non-finite value on either side
        return _summarise(abs_err, np.abs(ref), bound)
    ref_finite = np.isfinite(ref)
    matches = (np.isnan(ref) & np.isnan(out)) | (ref == out)
    # Non-finite on one side only is an infinite error; a non-finite reference must be
    # matched exactly (same infinity, or NaN), whatever the bound says.
    abs_err = np.where(ref_finite, np.where(np.isfinite(out), abs_err, np.inf), np.where(matches, 0.0, np.inf))
    return _summarise(abs_err, np.abs(np.where(ref_finite, ref, 0.0)), np.where(ref_finite, bound, 0.0))


def _summarise(abs_err: np.ndarray, ref_magnitude: np.ndarray, bound: np.ndarray) -> ErrorStats:
    """ErrorStats from per-element errors (inf where non-finite values disagree)."""
    tiny = np.finfo(np.float64).tiny
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        ratio = abs_err / np.maximum(bound, tiny)
        ratio[abs_err == 0] = 0.0
        rel = abs_err / np.maximum(np.maximum(ref_magnitude, bound), tiny)
    n_bad = int(np.count_nonzero(abs_err > bound))
    worst = tuple(int(i) for i in np.unravel_index(int(np.argmax(ratio)), ratio.shape)) if n_bad else ()
    return ErrorStats(
        max_abs_err=float(abs_err.max()) if abs_err.size else 0.0,
        max_rel_err=float(rel.max()) if rel.size else 0.0,
        max_err_ratio=float(ratio.max()) if ratio.size else 0.0,
        n_bad=n_bad, n_total=int(abs_err.size), worst_index=worst)


def trivial_reason(ref: np.ndarray, bound: np.ndarray) -> str:
    """Why a reference is too weak to prove anything ('' when it is fine).

    Trivial means a kernel writing one constant would pass: every |ref| within its bound,
    or every element within the bounds of one value. A one-element output is exempt from
    the constant test (a full reduction is a single number by nature).
    """
    ref = np.asarray(ref, dtype=np.float64)
    bound = np.broadcast_to(np.asarray(bound, dtype=np.float64), ref.shape)
    finite = np.isfinite(ref)
    if not finite.any():
        return "the reference has no finite element"
    values, limits = ref[finite], bound[finite]
    if np.all(np.abs(values) <= limits):
        return f"every |reference| element is within its error bound (max |ref| {np.abs(values).max():.3g})"
    if values.size > 1:
        spread = float(values.max() - values.min())
        if spread <= 2 * float(limits.min()):
            return (f"the reference is near-constant (spread {spread:.3g} over {values.size} elements, "
                    f"smallest bound {float(limits.min()):.3g})")
    return ""


def agreement_bound(ref: np.ndarray, bound: np.ndarray, terms) -> np.ndarray:
    """How far two correct members may differ at each element: the reference bound with
    its output-rounding term replaced by one ulp of the output dtype (each member rounds
    once to nearest, so two correct results can sit on neighbouring values), and the
    accumulation term counted once. Tighter than the 2x bound that two members within
    the reference bound can already be apart, so the check can fire."""
    ref = np.abs(np.asarray(ref, dtype=np.float64))
    if terms is None or terms.u_out == 0.0:
        return np.asarray(bound, dtype=np.float64)
    ulp = 2.0 * terms.u_out * np.maximum(ref, terms.tiny_out)
    return np.asarray(bound, dtype=np.float64) - terms.u_out * ref + ulp


def agreement(out: np.ndarray, other: np.ndarray, limit: np.ndarray) -> ErrorStats:
    """``out`` against another member's output under the agreement bound ``limit``."""
    return error_stats(out, other, limit)
