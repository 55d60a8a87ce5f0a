"""What a worker reports for one row, and how the parent turns it into a verifier status.

The worker only runs kernels and moves bits; every judgement (written? within tolerance?
agrees with the others?) happens here in the parent, so it is testable without a GPU.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from .compare import agreement, error_stats
from .inputs import from_storage, unwritten_count

# Worker-side failure kinds -> row status.
ERROR_STATUS = {
    "jit_failed": "jit_failed",
    "launch_failed": "launch_failed",
    "crashed": "crashed",
    "timeout": "timeout",
    "died": "crashed",       # the worker vanished without a message
    "arg_error": "launch_failed",
}


@dataclass
class TrialRun:
    """One trial as the worker ran it: outputs of the first run (storage bits), outputs of
    the rerun only when their bits differ, and the inputs the kernel changed."""
    trial: int
    outputs: dict
    rerun_outputs: Optional[dict] = None
    modified_inputs: list = field(default_factory=list)


@dataclass
class CheckResult:
    """A worker's answer to a check job. ``error`` is None or a key of ERROR_STATUS."""
    runs: list = field(default_factory=list)
    error: Optional[str] = None
    message: str = ""
    fatal: bool = False  # the worker exited (dead context); the parent starts a new one
    load_path: str = ""


@dataclass
class OutputSpec:
    """What the parent knows about one checked buffer: dtype, reference per trial, tolerance."""
    name: str
    dtype: str
    atol: float
    rtol: float


@dataclass
class Verdict:
    status: str
    message: str = ""
    max_abs_err: Optional[float] = None
    max_rel_err: Optional[float] = None
    atol: Optional[float] = None
    rtol: Optional[float] = None
    trials: int = 0
    deterministic: Optional[bool] = None
    outputs: Optional[list] = None  # per trial: name -> float64 output (for agreement)


def classify(result: CheckResult, specs: list, references: list, baseline: Optional[list] = None) -> Verdict:
    """Status of one member from its worker result.

    ``specs``: OutputSpec per out/inout buffer. ``references``: per trial, name -> float64.
    ``baseline``: per trial, name -> float64 output of the group's first passing member.
    Order of checks: worker error, modified input, unwritten output, wrong result,
    disagreement. Non-determinism alone is not a failure (deterministic=False).
    """
    atol = max((s.atol for s in specs), default=None)
    rtol = max((s.rtol for s in specs), default=None)
    if result.error:
        status = ERROR_STATUS.get(result.error, "crashed")
        return Verdict(status, result.message, atol=atol, rtol=rtol, trials=len(result.runs))
    if len(result.runs) != len(references):
        return Verdict("crashed", f"worker returned {len(result.runs)} trials, expected {len(references)}",
                       atol=atol, rtol=rtol)
    for run in result.runs:
        if run.modified_inputs:
            return Verdict("modified_input", f"trial {run.trial}: input buffer(s) {', '.join(run.modified_inputs)} "
                           "changed by the kernel", atol=atol, rtol=rtol, trials=len(result.runs))
    for run in result.runs:
        for spec in specs:
            if spec.name not in run.outputs:
                return Verdict("crashed", f"trial {run.trial}: output {spec.name} missing from the worker result")
            n = unwritten_count(run.outputs[spec.name], spec.dtype)
            if n:
                size = run.outputs[spec.name].size
                return Verdict("unwritten_output", f"trial {run.trial}: {n} of {size} elements of {spec.name} "
                               "never written (still poison)", atol=atol, rtol=rtol, trials=len(result.runs))
    max_abs, max_rel = 0.0, 0.0
    deterministic = True
    failure = ""
    values_per_trial = []
    for run, ref in zip(result.runs, references):
        values = {}
        runs_to_check = [("", run.outputs)]
        if run.rerun_outputs is not None:
            deterministic = False
            runs_to_check.append((" (rerun)", run.rerun_outputs))
        for label, outputs in runs_to_check:
            for spec in specs:
                out = from_storage(outputs[spec.name], spec.dtype)
                if not label:
                    values[spec.name] = out
                stats = error_stats(out, ref[spec.name], spec.atol, spec.rtol)
                max_abs, max_rel = max(max_abs, stats.max_abs_err), max(max_rel, stats.max_rel_err)
                if not stats.ok and not failure:
                    failure = (f"trial {run.trial}{label}: {spec.name} has {stats.n_bad} of {stats.n_total} elements "
                               f"outside atol={spec.atol:.3g} rtol={spec.rtol:.3g} (max abs err {stats.max_abs_err:.3g} "
                               f"at {stats.worst_index})")
        values_per_trial.append(values)
    common = dict(max_abs_err=max_abs, max_rel_err=max_rel, atol=atol, rtol=rtol, trials=len(result.runs),
                  deterministic=deterministic)
    if failure:
        return Verdict("wrong_result", failure, **common)
    if baseline is not None:
        for trial_index, (values, base) in enumerate(zip(values_per_trial, baseline)):
            for spec in specs:
                stats = agreement(values[spec.name], base[spec.name], spec.atol, spec.rtol)
                if not stats.ok:
                    return Verdict("disagrees", f"trial {result.runs[trial_index].trial}: {spec.name} differs from the "
                                   f"group's first passing member in {stats.n_bad} elements (max abs diff "
                                   f"{stats.max_abs_err:.3g})", **common)
    note = "" if deterministic else "reruns differ bitwise (within tolerance)"
    return Verdict("passed", note, outputs=values_per_trial, **common)


def inputs_changed(before: dict, after: dict) -> list:
    """Names of buffers whose bits differ between ``before`` and ``after``."""
    return [name for name in before
            if np.ascontiguousarray(before[name]).tobytes() != np.ascontiguousarray(after[name]).tobytes()]
