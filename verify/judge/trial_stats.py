"""Per-trial error statistics and witnesses for the dataset's re-thresholdable columns.

The largest error in ulps comes from ``compare.error_stats`` (its ``max_ulp_err``).
``TrialErrors`` folds one trial's outputs (and rerun) into one ``trial_errors`` entry.
``first_outside``: the first flat index where an output leaves its bound (a witness).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from .compare import CHUNK, ErrorStats, _chunk_errors
from .judge import is_tensor, to_host


@dataclass
class TrialErrors:
    """One trial's errors over its outputs and rerun (max of maxima; bad elements summed
    over outputs, the worse of run and rerun)."""
    trial: int
    max_abs_err: float = 0.0
    max_rel_err: float = 0.0
    max_ulp_err: float = 0.0
    max_err_ratio: float = 0.0
    n_bad: int = 0
    n_total: int = 0

    def add(self, stats: ErrorStats, ulp: float, first_run: bool, bad_so_far: int) -> int:
        """Fold one output's stats in; returns that output's bad count for the rerun's max."""
        self.max_abs_err = max(self.max_abs_err, stats.max_abs_err)
        self.max_rel_err = max(self.max_rel_err, stats.max_rel_err)
        self.max_ulp_err = max(self.max_ulp_err, ulp)
        self.max_err_ratio = max(self.max_err_ratio, stats.max_err_ratio)
        if first_run:
            self.n_bad += stats.n_bad
            self.n_total += stats.n_total
        elif stats.n_bad > bad_so_far:
            self.n_bad += stats.n_bad - bad_so_far
        return stats.n_bad

    def as_row(self) -> dict:
        return {"trial": self.trial, "max_abs_err": self.max_abs_err, "max_rel_err": self.max_rel_err,
                "max_ulp_err": self.max_ulp_err, "max_err_ratio": self.max_err_ratio,
                "n_bad": self.n_bad, "n_total": self.n_total}


def first_outside(out, ref, bound) -> Optional[int]:
    """The first flat index where ``|out - ref| > bound`` (non-finite rules of compare.py),
    None when every element is within."""
    flat_out = to_host(out).reshape(-1).astype(np.float64)
    flat_ref = to_host(ref).reshape(-1).astype(np.float64)
    flat_bound = np.broadcast_to(to_host(bound).astype(np.float64), to_host(ref).shape).reshape(-1)
    for begin in range(0, flat_ref.shape[0], CHUNK):
        end = begin + CHUNK
        abs_err, _, limit = _chunk_errors(flat_out[begin:end], flat_ref[begin:end], flat_bound[begin:end], np)
        bad = np.flatnonzero(abs_err > limit)
        if bad.size:
            return begin + int(bad[0])
    return None


def element(array, flat_index: int) -> float:
    """One element of a (numpy or torch) array as a float."""
    if is_tensor(array):
        return float(array.reshape(-1)[flat_index].item())
    return float(np.asarray(array).reshape(-1)[flat_index])


def bound_at(bound, shape: tuple, flat_index: int) -> float:
    """The (possibly broadcast) bound at one flat index of an output of ``shape``."""
    where = np.unravel_index(flat_index, tuple(shape))
    return float(np.broadcast_to(to_host(bound), tuple(shape))[where])
