"""What a worker reports for one row, and how the parent turns it into a verifier status.

The worker only runs kernels and moves bits; every judgement (in bounds? written? within
the error bound? agrees with the others?) happens here in the parent, so it is testable
without a GPU.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from .compare import agreement, error_stats
from .inputs import exact_values, unwritten_count
from .trial_stats import TrialErrors, bound_at, element, first_outside, max_ulp_error

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
    the rerun only when their bits differ, the inputs the kernel changed, and writes found
    in the guard regions around buffers (dicts: buffer, offset, bytes)."""
    trial: int
    outputs: dict
    rerun_outputs: Optional[dict] = None
    modified_inputs: list = field(default_factory=list)
    out_of_bounds: list = field(default_factory=list)


@dataclass
class CheckResult:
    """A worker's answer to a check job. ``error`` is None or a key of ERROR_STATUS."""
    runs: list = field(default_factory=list)
    error: Optional[str] = None
    message: str = ""
    fatal: bool = False  # the worker exited (dead context); the parent starts a new one
    load_path: str = ""
    seconds: dict = field(default_factory=dict)  # worker wall time per phase (load, upload, kernel, ...)


@dataclass
class OutputSpec:
    """What the parent knows about one checked buffer: its dtype and, per trial, the
    error bound and the agreement bound (float64 arrays shaped like the output)."""
    name: str
    dtype: str
    bounds: list = field(default_factory=list)
    agreement_bounds: list = field(default_factory=list)


@dataclass
class Verdict:
    status: str
    message: str = ""
    max_abs_err: Optional[float] = None
    max_rel_err: Optional[float] = None
    max_err_ratio: Optional[float] = None
    trials: int = 0
    deterministic: Optional[bool] = None
    output_hash: Optional[str] = None
    outputs: Optional[list] = None  # per trial: name -> storage bits (for agreement)
    trial_errors: Optional[list] = None  # per trial: TrialErrors.as_row() (the runner adds kind, seed)
    witness: Optional[dict] = None       # a failure's trial and, where it is an element, the element


def _failure(status: str, message: str, trial: Optional[int] = None, output: Optional[str] = None,
             **common) -> Verdict:
    return Verdict(status, message, witness={"trial": trial, "output": output, "reason": message}, **common)


def describe_out_of_bounds(hit: dict) -> str:
    offset, name, size = hit["offset"], hit["buffer"], hit.get("size", 0)
    where = f"{-offset} bytes before its start" if offset < 0 else f"byte {offset} (it has {size} bytes)"
    return f"wrote {hit['bytes']} guard byte(s) of buffer {name} at {where}"


def output_hash(runs: list, specs: list) -> str:
    """Hash of every trial's output bits (first runs): equal hashes, bit-identical members."""
    digest = hashlib.sha256()
    for run in runs:
        for spec in specs:
            digest.update(memoryview(np.ascontiguousarray(run.outputs[spec.name]).reshape(-1).view(np.uint8)))
    return digest.hexdigest()[:16]


def classify(result: CheckResult, specs: list, references: list, host_references: Optional[list] = None) -> Verdict:
    """Status of one member from its worker result, judged against the reference.

    ``specs``: OutputSpec per out/inout buffer (with per-trial bounds). ``references``: per
    trial, name -> float64 (numpy, or torch tensors where members are judged on the GPU;
    ``host_references`` then gives the same values on the host, for the unwritten check). Order of checks: worker error, out-of-bounds write, modified
    input, unwritten output, error bound. Non-determinism alone is not a failure
    (deterministic=False). Agreement between members is judged per group afterwards
    (``Consensus``).
    """
    if result.error:
        status = ERROR_STATUS.get(result.error, "crashed")
        return _failure(status, result.message, trials=len(result.runs))
    if len(result.runs) != len(references):
        return Verdict("crashed", f"worker returned {len(result.runs)} trials, expected {len(references)}")
    trials = len(result.runs)
    for run in result.runs:
        if run.out_of_bounds:
            hits = "; ".join(describe_out_of_bounds(h) for h in run.out_of_bounds[:3])
            return _failure("out_of_bounds_write", f"trial {run.trial}: {hits}", run.trial,
                            run.out_of_bounds[0]["buffer"], trials=trials)
    for run in result.runs:
        if run.modified_inputs:
            return _failure("modified_input", f"trial {run.trial}: input buffer(s) {', '.join(run.modified_inputs)} "
                            "changed by the kernel", run.trial, run.modified_inputs[0], trials=trials)
    for run, ref in zip(result.runs, host_references or references):
        for spec in specs:
            if spec.name not in run.outputs:
                return Verdict("crashed", f"trial {run.trial}: output {spec.name} missing from the worker result")
            n = unwritten_count(run.outputs[spec.name], spec.dtype, ref.get(spec.name))
            if n:
                size = run.outputs[spec.name].size
                return _failure("unwritten_output", f"trial {run.trial}: {n} of {size} elements of {spec.name} "
                                "never written (still poison)", run.trial, spec.name, trials=trials)
    max_abs, max_rel, max_ratio = 0.0, 0.0, 0.0
    deterministic = True
    failure, witness = "", None
    per_trial = []
    for index, (run, ref) in enumerate(zip(result.runs, references)):
        runs_to_check = [("", run.outputs)]
        if run.rerun_outputs is not None:
            deterministic = False
            runs_to_check.append((" (rerun)", run.rerun_outputs))
        errors, first_bad = TrialErrors(run.trial), {}
        for label, outputs in runs_to_check:
            for spec in specs:
                out = exact_values(outputs[spec.name], spec.dtype)
                stats = error_stats(out, ref[spec.name], spec.bounds[index])
                max_abs, max_rel = max(max_abs, stats.max_abs_err), max(max_rel, stats.max_rel_err)
                max_ratio = max(max_ratio, stats.max_err_ratio)
                first_bad[spec.name] = errors.add(stats, max_ulp_error(out, ref[spec.name], spec.dtype),
                                                  not label, first_bad.get(spec.name, 0))
                if not stats.ok and not failure:
                    failure = (f"trial {run.trial}{label}: {spec.name} has {stats.n_bad} of {stats.n_total} elements "
                               f"outside the error bound (max |err|/bound {stats.max_err_ratio:.3g} at "
                               f"{stats.worst_index}; max abs err {stats.max_abs_err:.3g})")
                    host_ref = (host_references or references)[index][spec.name]
                    flat = first_outside(out, host_ref, spec.bounds[index])
                    witness = {"trial": run.trial, "output": spec.name, "flat_index": flat, "reason": failure,
                               "reference": element(host_ref, flat), "value": element(out, flat),
                               "bound": bound_at(spec.bounds[index], host_ref.shape, flat)}
        per_trial.append(errors.as_row())
    common = dict(max_abs_err=max_abs, max_rel_err=max_rel, max_err_ratio=max_ratio, trials=trials,
                  deterministic=deterministic, output_hash=output_hash(result.runs, specs), trial_errors=per_trial)
    if failure:
        return Verdict("wrong_result", failure, witness=witness, **common)
    note = "" if deterministic else "reruns differ bitwise (within the error bound)"
    outputs = [{spec.name: run.outputs[spec.name] for spec in specs} for run in result.runs]
    return Verdict("passed", note, outputs=outputs, **common)


def disagreement(outputs: list, other: list, specs: list) -> tuple:
    """(max |a - b| / agreement bound over trials and outputs, first failure message or '')."""
    worst, message = 0.0, ""
    for index, (mine, theirs) in enumerate(zip(outputs, other)):
        for spec in specs:
            stats = agreement(exact_values(mine[spec.name], spec.dtype), exact_values(theirs[spec.name], spec.dtype),
                              spec.agreement_bounds[index])
            worst = max(worst, stats.max_err_ratio)
            if not stats.ok and not message:
                message = (f"trial {index}: {spec.name} differs in {stats.n_bad} of {stats.n_total} elements by more "
                           f"than the agreement bound (max ratio {stats.max_err_ratio:.3g} at {stats.worst_index})")
    return worst, message


MAX_CLUSTERS = 4  # outputs kept per group: one representative per cluster of agreeing members


@dataclass
class _Cluster:
    representative: str          # build_key of the member whose outputs are kept
    outputs: list
    members: list = field(default_factory=list)


class Consensus:
    """Groups a group's passing members into clusters that agree under the agreement bound,
    keeping one member's outputs per cluster (memory stays bounded). The largest cluster
    (the earliest on a tie) is the consensus; members outside it disagree."""

    def __init__(self, specs: list):
        self.specs = specs
        self.clusters: list = []
        self.ratios: dict = {}    # build_key -> {cluster index: ratio}
        self.messages: dict = {}  # build_key -> {cluster index: message}
        self.home: dict = {}      # build_key -> cluster index, or -1 when no room was left

    def add(self, key: str, outputs: list) -> None:
        ratios, messages = {}, {}
        for index, cluster in enumerate(self.clusters):
            ratios[index], messages[index] = disagreement(outputs, cluster.outputs, self.specs)
        self.ratios[key], self.messages[key] = ratios, messages
        for index, cluster in enumerate(self.clusters):
            if not messages[index]:
                cluster.members.append(key)
                self.home[key] = index
                return
        if len(self.clusters) < MAX_CLUSTERS:
            self.clusters.append(_Cluster(key, outputs, [key]))
            self.home[key] = len(self.clusters) - 1
            self.ratios[key][self.home[key]] = 0.0
        else:
            self.home[key] = -1

    def _best(self) -> int:
        return max(range(len(self.clusters)), key=lambda i: (len(self.clusters[i].members), -i))

    def consensus(self) -> tuple:
        """(build_key, outputs) of the consensus cluster's representative, or (None, None)."""
        if not self.clusters:
            return None, None
        cluster = self.clusters[self._best()]
        return cluster.representative, cluster.outputs

    def witness(self, key: str) -> Optional[dict]:
        """Where member ``key`` first leaves the agreement bound around the consensus
        member: trial, output, flat_index, value, consensus_value, bound. Only a cluster's
        representative has its outputs kept; None for other members."""
        rep_key, rep_outputs = self.consensus()
        mine = next((c.outputs for c in self.clusters if c.representative == key), None)
        if mine is None or rep_outputs is None or key == rep_key:
            return None
        for index, (ours, theirs) in enumerate(zip(mine, rep_outputs)):
            for spec in self.specs:
                x, y = exact_values(ours[spec.name], spec.dtype), exact_values(theirs[spec.name], spec.dtype)
                flat = first_outside(x, y, spec.agreement_bounds[index])
                if flat is not None:
                    return {"trial": index, "output": spec.name, "flat_index": flat, "value": element(x, flat),
                            "consensus_value": element(y, flat),
                            "bound": bound_at(spec.agreement_bounds[index], tuple(np.shape(x)), flat)}
        return None

    def verdicts(self) -> dict:
        """build_key -> (agrees, max_disagreement, message) against the consensus cluster."""
        if not self.clusters:
            return {}
        best = self._best()
        rep = self.clusters[best].representative
        out = {}
        for key, home in self.home.items():
            ratio = self.ratios[key].get(best)
            if ratio is None:  # joined an earlier cluster before the consensus one existed
                ratio = self.ratios[self.clusters[home].representative].get(best) if home >= 0 else None
            known = self.messages[key].get(best)
            if home == best or known == "":
                out[key] = (True, ratio, "")
            else:
                message = known or (
                    f"agrees with another cluster of members, not with the group's consensus (member {rep[:12]})")
                out[key] = (False, ratio, f"disagrees with the group's consensus: {message}")
        return out


def inputs_changed(before: dict, after: dict) -> list:
    """Names of buffers whose bits differ between ``before`` and ``after`` (compared as
    bytes, since NaN != NaN)."""
    def raw(array):
        return np.ascontiguousarray(array).reshape(-1).view(np.uint8)
    return [name for name in before if not np.array_equal(raw(before[name]), raw(after[name]))]
