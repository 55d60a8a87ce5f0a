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

from dataset_spec.numerics import FORMATS

from .judge import device_of, is_tensor


@dataclass
class ErrorStats:
    max_abs_err: float
    max_rel_err: float   # |err| / max(|ref|, bound): relative where |ref| is above the bound
    max_err_ratio: float  # max |err| / bound: <= 1 passes
    n_bad: int           # elements outside the bound
    n_total: int
    worst_index: tuple   # where the largest violation is (for the message), () if none
    max_ulp_err: float = 0.0  # max |err| in ulps of ref in the output dtype (when error_stats had it)

    @property
    def ok(self) -> bool:
        return self.n_bad == 0


CHUNK = 1 << 18        # elements per host pass: each chunk's temporaries stay in cache
TORCH_CHUNK = 1 << 25  # elements per GPU pass: bounds the float64 temporaries to about 1 GiB
TINY = np.finfo(np.float64).tiny


def error_stats(out: np.ndarray, ref: np.ndarray, bound: np.ndarray, dtype: str = "") -> ErrorStats:
    """Errors of ``out`` against ``ref`` (float64, same shape) under the per-element ``bound``;
    with the output ``dtype``, also the largest error in ulps of ``ref`` in that dtype
    (ulp(x) = 2 u 2^floor(log2 max(|x|, tiny)), so subnormal references count in the
    smallest subnormal; integer outputs count in units of 1), from the same pass.

    Works through the arrays in chunks: at tens of millions of elements, whole-array
    temporaries (several float64 copies) made this the slowest part of a verify. When
    ``ref`` or ``bound`` is a torch tensor (judge.py), the same code runs with torch on
    that tensor's device; otherwise with numpy."""
    device = device_of(ref, bound)
    if device is None:
        xp, chunk = np, CHUNK
        out, ref = np.asarray(out), np.asarray(ref, dtype=np.float64)
        bound = np.asarray(bound, dtype=np.float64)

        def widen(values):
            return values.astype(np.float64)
    else:
        import torch
        xp, chunk = torch, TORCH_CHUNK
        out, ref, bound = (_on(a, device, torch, dtype) for a, dtype in
                           ((out, None), (ref, torch.float64), (bound, torch.float64)))

        def widen(values):
            return values.to(dtype=torch.float64)
    if tuple(out.shape) != tuple(ref.shape):
        raise ValueError(f"output shape {tuple(out.shape)} != reference shape {tuple(ref.shape)}")
    flat_out, flat_ref = out.reshape(-1), ref.reshape(-1)
    # a one-value bound stays a scalar; an array bound is made flat (a copy only if broadcast)
    flat_bound = (bound.reshape(()) if bound.reshape(-1).shape[0] == 1
                  else xp.broadcast_to(bound, ref.shape).reshape(-1))
    total = flat_ref.shape[0]
    summary = _Running(FORMATS.get(dtype), bool(dtype))
    for begin in range(0, total, chunk):
        end = min(begin + chunk, total)
        chunk_bound = flat_bound if flat_bound.ndim == 0 else flat_bound[begin:end]
        summary.add(begin, *_chunk_errors(widen(flat_out[begin:end]), flat_ref[begin:end], chunk_bound, xp), xp)
    return summary.stats(total, tuple(ref.shape))


def _on(array, device, torch, dtype):
    """``array`` (numpy or torch) as a tensor on ``device``, converted to ``dtype`` if given."""
    if not is_tensor(array):
        with warnings.catch_warnings():  # read-only arrays (Ray's object store) are only read here
            warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
            array = torch.from_numpy(np.ascontiguousarray(array))
    return array.to(device=device, dtype=dtype) if dtype is not None else array.to(device=device)


def _chunk_errors(out, ref, bound, xp) -> tuple:
    """(abs_err, |ref| used for the relative error, bound) of one chunk, with ``xp`` numpy or
    torch. Non-finite on one side only is an infinite error; a non-finite reference must be
    matched exactly (same infinity, or NaN), whatever the bound says."""
    with np.errstate(invalid="ignore", over="ignore"):
        abs_err = xp.abs(out - ref)
    if bool(xp.isfinite(abs_err).all()):  # the common case: no non-finite value on either side
        return abs_err, xp.abs(ref), bound
    ref_finite = xp.isfinite(ref)
    matches = (xp.isnan(ref) & xp.isnan(out)) | (ref == out)
    inf = float("inf")
    abs_err = xp.where(ref_finite, xp.where(xp.isfinite(out), abs_err, inf), xp.where(matches, 0.0, inf))
    return abs_err, xp.abs(xp.where(ref_finite, ref, 0.0)), xp.where(ref_finite, bound, 0.0)


class _Running:
    """Maxima and counts over chunks, with the flat index of the worst violation."""

    def __init__(self, fmt=None, ulps: bool = False):
        self.max_abs = self.max_rel = self.max_ratio = self.max_ulp = 0.0
        self.n_bad = 0
        self.worst_ratio, self.worst_flat = -1.0, -1
        self.fmt, self.ulps = fmt, ulps  # ulps of the output dtype (fmt None: integer, units of 1)

    def add(self, offset: int, abs_err, ref_magnitude, bound, xp) -> None:
        if not abs_err.shape[0]:
            return
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            ratio = abs_err / xp.clip(bound, TINY, None)  # 0 where the error is 0
            rel = abs_err / xp.clip(xp.maximum(ref_magnitude, bound), TINY, None)
        bad = int(xp.count_nonzero(abs_err > bound))
        self.n_bad += bad
        self.max_abs = max(self.max_abs, float(abs_err.max()))
        self.max_rel = max(self.max_rel, float(rel.max()))
        chunk_ratio = float(ratio.max())
        self.max_ratio = max(self.max_ratio, chunk_ratio)
        if bad and chunk_ratio > self.worst_ratio:
            self.worst_ratio, self.worst_flat = chunk_ratio, offset + int(xp.argmax(ratio))
        if self.ulps:
            self.max_ulp = max(self.max_ulp, float((abs_err / self._ulp(ref_magnitude, xp)).max()))

    def _ulp(self, magnitude, xp):
        if self.fmt is None:
            return 1.0
        if xp is np:
            _, exponent = np.frexp(np.maximum(magnitude, self.fmt.tiny))
            return 2.0 * self.fmt.unit_roundoff * np.exp2(exponent - 1.0)
        _, exponent = xp.frexp(xp.clamp(magnitude, min=self.fmt.tiny))
        return 2.0 * self.fmt.unit_roundoff * xp.exp2(exponent.to(magnitude.dtype) - 1.0)

    def stats(self, total: int, shape: tuple) -> ErrorStats:
        worst = tuple(int(i) for i in np.unravel_index(self.worst_flat, shape)) if self.n_bad else ()
        return ErrorStats(max_abs_err=self.max_abs, max_rel_err=self.max_rel, max_err_ratio=self.max_ratio,
                          n_bad=self.n_bad, n_total=total, worst_index=worst, max_ulp_err=self.max_ulp)


def trivial_reason(ref: np.ndarray, bound: np.ndarray) -> str:
    """Why a reference is too weak to prove anything ('' when it is fine).

    Trivial means a kernel writing one constant would pass: every |ref| within its bound,
    or every element within the bounds of one value. A one-element output is exempt from
    the constant test (a full reduction is a single number by nature). An output with both
    finite and non-finite elements is not trivial: a non-finite reference must be matched
    exactly, so no one constant matches both (an attention mask's 0 and -inf).
    """
    ref = np.asarray(ref, dtype=np.float64)
    bound = np.broadcast_to(np.asarray(bound, dtype=np.float64), ref.shape)
    finite = np.isfinite(ref)
    if not finite.any():
        return "the reference has no finite element"
    if not finite.all():
        return ""
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
    # an infinite reference gives inf - inf (NaN) here: such elements are judged exactly, not by this bound
    with np.errstate(invalid="ignore"):
        return np.asarray(bound, dtype=np.float64) - terms.u_out * ref + ulp


def agreement(out: np.ndarray, other: np.ndarray, limit: np.ndarray) -> ErrorStats:
    """``out`` against another member's output under the agreement bound ``limit``."""
    return error_stats(out, other, limit)
