"""Numerical checks: error against the float64 reference under the per-element bound,
trivial references, and agreement between members.

Every check takes a per-element ``bound`` array (``OpSpec.bounds``; docs/verification.md):
an element fails when ``|out - ref| > bound``. Non-finite outputs fail wherever the
reference is finite; where the reference itself is non-finite the output must match it
(same infinity, or NaN).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from .judge import device_of, is_tensor


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


CHUNK = 1 << 18  # elements per pass: each chunk's temporaries stay in cache


def error_stats(out: np.ndarray, ref: np.ndarray, bound: np.ndarray) -> ErrorStats:
    """Errors of ``out`` against ``ref`` (float64, same shape) under the per-element ``bound``.

    Works through the arrays in chunks: at tens of millions of elements, whole-array
    temporaries (several float64 copies) made this the slowest part of a verify. When
    ``ref`` or ``bound`` is a torch tensor (judge.py), the same formulas run on its GPU."""
    device = device_of(ref, bound)
    if device is not None:
        return _error_stats_torch(out, ref, bound, device)
    out, ref = np.asarray(out), np.asarray(ref, dtype=np.float64)
    if out.shape != ref.shape:
        raise ValueError(f"output shape {out.shape} != reference shape {ref.shape}")
    bound = np.asarray(bound, dtype=np.float64)
    flat_out, flat_ref = out.reshape(-1), ref.reshape(-1)
    # a one-value bound stays a scalar; an array bound is made flat (a copy only if broadcast)
    flat_bound = bound.reshape(()) if bound.size == 1 else np.broadcast_to(bound, ref.shape).reshape(-1)
    total = flat_ref.size
    summary = _Running()
    for begin in range(0, total, CHUNK):
        end = min(begin + CHUNK, total)
        chunk_bound = flat_bound if flat_bound.ndim == 0 else flat_bound[begin:end]
        summary.add(begin, *_chunk_errors(flat_out[begin:end].astype(np.float64), flat_ref[begin:end], chunk_bound))
    return summary.stats(total, ref.shape)


def _chunk_errors(out: np.ndarray, ref: np.ndarray, bound: np.ndarray) -> tuple:
    """(abs_err, |ref| used for the relative error, bound) of one chunk. Non-finite on one
    side only is an infinite error; a non-finite reference must be matched exactly (same
    infinity, or NaN), whatever the bound says."""
    with np.errstate(invalid="ignore", over="ignore"):
        abs_err = np.abs(out - ref)
    if np.isfinite(abs_err).all():  # the common case: no non-finite value on either side
        return abs_err, np.abs(ref), bound
    ref_finite = np.isfinite(ref)
    matches = (np.isnan(ref) & np.isnan(out)) | (ref == out)
    abs_err = np.where(ref_finite, np.where(np.isfinite(out), abs_err, np.inf), np.where(matches, 0.0, np.inf))
    return abs_err, np.abs(np.where(ref_finite, ref, 0.0)), np.where(ref_finite, bound, 0.0)


TORCH_CHUNK = 1 << 25  # elements per GPU pass: bounds the float64 temporaries to about 1 GiB


def _error_stats_torch(out, ref, bound, device) -> ErrorStats:
    """``error_stats`` on the GPU: the same rules, in float64, chunked like the host path."""
    import torch
    with warnings.catch_warnings():  # read-only arrays (Ray's object store) are only read here
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        out_t = out if is_tensor(out) else torch.from_numpy(np.ascontiguousarray(out))
        ref_t = ref if is_tensor(ref) else torch.from_numpy(np.ascontiguousarray(ref))
    bound_t = bound if is_tensor(bound) else torch.as_tensor(np.asarray(bound, dtype=np.float64))
    if tuple(out_t.shape) != tuple(ref_t.shape):
        raise ValueError(f"output shape {tuple(out_t.shape)} != reference shape {tuple(ref_t.shape)}")
    shape = tuple(ref_t.shape)
    flat_out = out_t.reshape(-1)
    flat_ref = ref_t.to(device=device, dtype=torch.float64).reshape(-1)
    bound_t = bound_t.to(device=device, dtype=torch.float64)
    flat_bound = bound_t.reshape(()) if bound_t.numel() == 1 else bound_t.expand(shape).reshape(-1)
    total = flat_ref.numel()
    tiny = _Running.TINY
    max_abs = max_rel = max_ratio = 0.0
    n_bad, worst_ratio, worst_flat = 0, -1.0, -1
    for begin in range(0, total, TORCH_CHUNK):
        end = min(begin + TORCH_CHUNK, total)
        o = flat_out[begin:end].to(device=device, dtype=torch.float64)
        r = flat_ref[begin:end]
        b = flat_bound if flat_bound.dim() == 0 else flat_bound[begin:end]
        abs_err = (o - r).abs()
        if not bool(torch.isfinite(abs_err).all()):
            r_finite = torch.isfinite(r)
            matches = (torch.isnan(r) & torch.isnan(o)) | (r == o)
            inf = torch.tensor(float("inf"), dtype=torch.float64, device=device)
            zero = torch.zeros((), dtype=torch.float64, device=device)
            abs_err = torch.where(r_finite, torch.where(torch.isfinite(o), abs_err, inf), torch.where(matches, zero, inf))
            r = torch.where(r_finite, r, zero)
            b = torch.where(r_finite, b, zero)
        ratio = abs_err / b.clamp_min(tiny)
        rel = abs_err / torch.maximum(r.abs(), b).clamp_min(tiny)
        bad = int(torch.count_nonzero(abs_err > b))
        n_bad += bad
        max_abs = max(max_abs, float(abs_err.max()))
        max_rel = max(max_rel, float(rel.max()))
        chunk_max = float(ratio.max())
        max_ratio = max(max_ratio, chunk_max)
        if bad and chunk_max > worst_ratio:
            worst_ratio, worst_flat = chunk_max, begin + int(torch.argmax(ratio))
    worst = tuple(int(i) for i in np.unravel_index(worst_flat, shape)) if n_bad else ()
    return ErrorStats(max_abs_err=max_abs, max_rel_err=max_rel, max_err_ratio=max_ratio, n_bad=n_bad,
                      n_total=total, worst_index=worst)


class _Running:
    """Maxima and counts over chunks, with the flat index of the worst violation."""
    TINY = np.finfo(np.float64).tiny

    def __init__(self):
        self.max_abs = self.max_rel = self.max_ratio = 0.0
        self.n_bad = 0
        self.worst_ratio, self.worst_flat = -1.0, -1

    def add(self, offset: int, abs_err: np.ndarray, ref_magnitude: np.ndarray, bound: np.ndarray) -> None:
        if not abs_err.size:
            return
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            ratio = abs_err / np.maximum(bound, self.TINY)  # 0 where the error is 0
            rel = abs_err / np.maximum(np.maximum(ref_magnitude, bound), self.TINY)
        bad = int(np.count_nonzero(abs_err > bound))
        self.n_bad += bad
        self.max_abs = max(self.max_abs, float(abs_err.max()))
        self.max_rel = max(self.max_rel, float(rel.max()))
        chunk_ratio = float(ratio.max())
        self.max_ratio = max(self.max_ratio, chunk_ratio)
        if bad and chunk_ratio > self.worst_ratio:
            self.worst_ratio, self.worst_flat = chunk_ratio, offset + int(np.argmax(ratio))

    def stats(self, total: int, shape: tuple) -> ErrorStats:
        worst = tuple(int(i) for i in np.unravel_index(self.worst_flat, shape)) if self.n_bad else ()
        return ErrorStats(max_abs_err=self.max_abs, max_rel_err=self.max_rel, max_err_ratio=self.max_ratio,
                          n_bad=self.n_bad, n_total=total, worst_index=worst)


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
