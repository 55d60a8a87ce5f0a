"""What a worker reports for one row, and how the parent turns it into a verifier status.

The worker only runs kernels and moves bits; every judgement (in bounds? written? within
the error bound? agrees with the others?) happens here in the parent, so it is testable
without a GPU.
"""
from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from .compare import agreement, error_stats
from ..device.device_outputs import bits_equal, host_bits, is_tensor, own_copy
from ..trials.inputs import exact_values, unwritten_count
from .trial_stats import TrialErrors, bound_at, element, first_outside

# Worker-side failure kinds -> row status.
ERROR_STATUS = {
    "jit_failed": "jit_failed",
    "launch_failed": "launch_failed",
    "crashed": "crashed",
    "timeout": "timeout",
    "died": "crashed",       # the worker vanished without a message
    "arg_error": "launch_failed",
    # a fault that only the fences cause, attributed by a run with one fence lifted
    "modified_input": "modified_input",
    "out_of_bounds_write": "out_of_bounds_write",
}

# What a diagnosis found when a trial's runs disagree (TrialRun.varies_with).
VARIES_WITH = ("", "poison", "guard", "schedule", "binding")

# Floating-point global atomics and reductions: a correct kernel that uses them may round
# differently from run to run, so bitwise differences alone do not fail it.
_ATOMIC_OPCODE = re.compile(r"\b(?:atom|red|cp\.reduce\.async\.bulk)((?:\.[\w:]+)+)")
_FLOAT_TYPES = {"f16", "f16x2", "bf16", "bf16x2", "f32", "f64"}


_CALL = re.compile(r"\bcall(?:\.uni)?\s+(?:\([^)]*\)\s*,\s*)?([A-Za-z_$][\w$]*)")


def _has_float_atomic(text: str) -> bool:
    for match in _ATOMIC_OPCODE.finditer(text):
        parts = set(match.group(1).split(".")[1:])
        if "add" in parts and parts & _FLOAT_TYPES:
            return True
    return False


def float_atomics(ptx: str, entries=None) -> bool:
    """Whether the code that ``entries`` run (the launch sequence's entries and every
    function they call, directly or not) has an atomic or reduction add on a floating-point
    type; with ``entries`` None, anywhere in ``ptx``. An entry that is never launched
    excuses nothing: its atomics cannot reorder the launched kernels' sums. PTX the parser
    cannot read is searched whole."""
    return _has_float_atomic(ptx if entries is None else launched_code(ptx, entries))


def launched_code(ptx: str, entries) -> str:
    """The bodies of ``entries`` and of every function they call, directly or not; the
    whole text where the parser cannot read it or an entry is missing (never less)."""
    from ptx_tools.parse import parse_ptx
    try:
        module = parse_ptx(ptx)
        bodies = {f.name: f.body or "" for f in module.functions}
    except Exception:  # unreadable PTX: judge it whole rather than not at all
        return ptx
    seen, todo = set(), [e for e in entries if e in bodies]
    if len(todo) != len(set(entries)):
        return ptx
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(callee for callee in _CALL.findall(bodies[name]) if callee in bodies and callee not in seen)
    return "\n".join(bodies[name] for name in sorted(seen))


_STORE = re.compile(r"\b(?:st|atom|red)((?:\.[\w:]+)+)")
_BULK_STORE = re.compile(r"\bcp\.(?:reduce\.)?async\.bulk\.global\.")
_TYPE_BYTES = {"8": 1, "16": 2, "32": 4, "64": 8, "128": 16}
_NOT_GLOBAL = {"shared", "shared::cta", "shared::cluster", "local", "param", "const"}


def widest_global_store(code: str) -> int:
    """Bytes of the widest store, atomic or reduction that may write global memory in
    ``code`` (vector width times element size; 16 for bulk copies to global)."""
    widest = 16 if _BULK_STORE.search(code) else 0
    for match in _STORE.finditer(code):
        parts = match.group(1).split(".")[1:]
        if _NOT_GLOBAL & set(parts):
            continue
        lanes = next((int(p[1:]) for p in parts if p in ("v2", "v4", "v8")), 1)
        size = next((_TYPE_BYTES[p[1:]] for p in parts if p[:1] in "bsuf" and p[1:] in _TYPE_BYTES), 0)
        size = max(size, 4 if any(p in ("f16x2", "bf16x2") for p in parts) else 0)
        widest = max(widest, lanes * size)
    return widest


@dataclass
class TrialRun:
    """One trial as the worker ran it.

    Run 1 used guard fill 1 and poison 1 (``outputs``); run 2 guard fill 2, poison 2, the
    other placement and extra shared memory (``second_outputs``, only when its bits differ
    from run 1); a third run repeated run 1 beside a noise kernel. ``poisons``: output name
    -> (poison 1, poison 2) memset words. When runs disagree, the worker diagnosed why
    (``varies_with``: poison, guard or schedule, ``variation`` says which runs) and
    ``rerun_outputs`` holds another differing run's outputs, judged against the bound too.
    ``modified_inputs``: inputs whose bits changed; ``out_of_bounds``: writes found in the
    guards around buffers (dicts: buffer, offset, bytes)."""
    trial: int
    outputs: dict
    rerun_outputs: Optional[dict] = None
    modified_inputs: list = field(default_factory=list)
    out_of_bounds: list = field(default_factory=list)
    second_outputs: Optional[dict] = None
    poisons: dict = field(default_factory=dict)
    varies_with: str = ""
    variation: str = ""
    # run 3 ran while part of the SMs were held: why it did not finish within its deadline
    stalled: str = ""


@dataclass
class CheckResult:
    """A worker's answer to a check job. ``error`` is None or a key of ERROR_STATUS.
    ``float_atomics``: the PTX has floating-point atomic or reduction adds (see
    ``float_atomics``). ``notes``: how the runs were made (fences, perturbations skipped)."""
    runs: list = field(default_factory=list)
    error: Optional[str] = None
    message: str = ""
    fatal: bool = False  # the worker exited (dead context); the parent starts a new one
    load_path: str = ""
    seconds: dict = field(default_factory=dict)  # worker wall time per phase (load, upload, kernel, ...)
    float_atomics: bool = False
    fences: str = ""     # "vmm" or "arena: <why>"; empty from older workers
    notes: list = field(default_factory=list)


@dataclass
class OutputSpec:
    """What the parent knows about one checked buffer: its dtype and, per trial, the
    error bound and the agreement bound (float64 arrays shaped like the output)."""
    name: str
    dtype: str
    bounds: list = field(default_factory=list)
    agreement_bounds: list = field(default_factory=list)
    shape: Optional[tuple] = None  # the buffer's (a packed sub-byte output's storage is flat bytes)


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
            for chunk in _host_chunks(run.outputs[spec.name]):
                digest.update(memoryview(chunk))
    return digest.hexdigest()[:16]


HASH_CHUNK_BYTES = 1 << 24  # a device tensor is hashed through host copies of this size


def _host_chunks(array):
    """An output's bytes in order: a host array at once, a device tensor in chunks of
    HASH_CHUNK_BYTES copied to the host one after another (the hash is the same; the host
    holds one chunk, not the output)."""
    if not is_tensor(array):
        yield np.ascontiguousarray(array).reshape(-1).view(np.uint8)
        return
    import torch
    flat = array.detach().contiguous().reshape(-1).view(torch.uint8)
    for begin in range(0, flat.numel(), HASH_CHUNK_BYTES):
        yield flat[begin:begin + HASH_CHUNK_BYTES].cpu().numpy()


def classify(result: CheckResult, specs: list, references: list, host_references: Optional[list] = None,
             hash_pool=None) -> Verdict:
    """Status of one member from its worker result, judged against the reference.

    ``specs``: OutputSpec per out/inout buffer (with per-trial bounds). ``references``: per
    trial, name -> float64 (numpy, or torch tensors where members are judged on the GPU;
    ``host_references`` is accepted for callers that judge on the GPU; the unwritten check
    needs no reference: an element is unwritten when it holds both runs' poisons).
    ``hash_pool``: an executor; where the outputs are device tensors, the output hash (a
    sha256 over every trial's bits, copied to the host) is then computed there and the
    verdict's ``output_hash`` is its Future, for the caller to resolve.

    Order of checks: worker error (fence faults included), out-of-bounds write, modified
    input, unwritten output, the diagnosis of runs that disagree (reads its output ->
    wrong_result; reads guard bytes -> out_of_bounds_read; differs between runs of the same
    bits -> race_detected unless the PTX has floating-point atomics, whose every run is then
    judged and the row gets deterministic=False), error bound. Agreement between members is
    judged per group afterwards (``Consensus``).
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
    for run in result.runs:
        for spec in specs:
            if spec.name not in run.outputs:
                return Verdict("crashed", f"trial {run.trial}: output {spec.name} missing from the worker result")
            if spec.name not in run.poisons:
                continue
            second = (run.second_outputs or {}).get(spec.name)
            n = unwritten_count(run.outputs[spec.name], second, spec.dtype, run.poisons[spec.name], spec.shape)
            if n:
                size = int(np.prod(tuple(spec.shape or run.outputs[spec.name].shape)))
                return _failure("unwritten_output", f"trial {run.trial}: {n} of {size} elements of {spec.name} "
                                "never written (they hold each run's poison)", run.trial, spec.name, trials=trials)
    for run in result.runs:
        if run.stalled:
            return _failure("residency_deadlock", f"trial {run.trial}: {run.stalled}", run.trial, trials=trials)
    for run in result.runs:
        if run.varies_with == "binding":
            return _failure("stale_binding", f"trial {run.trial}: outputs change when every buffer moves to fresh "
                            f"pages between runs, so the kernel uses an address kept from an earlier launch "
                            f"({run.variation})", run.trial, trials=trials)
        if run.varies_with == "poison":
            return _failure("wrong_result", f"trial {run.trial}: the kernel reads its own output: outputs change "
                            f"with the poison written there before the run ({run.variation})", run.trial,
                            trials=trials)
        if run.varies_with == "guard":
            return _failure("out_of_bounds_read", f"trial {run.trial}: outputs change with the bytes outside the "
                            f"buffers (random guard fills), so the kernel reads out of bounds ({run.variation})",
                            run.trial, trials=trials)
        if run.varies_with == "schedule" and not result.float_atomics:
            return _failure("race_detected", f"trial {run.trial}: outputs differ bitwise between runs of the same "
                            f"inputs ({run.variation}), and the kernel has no floating-point atomics", run.trial,
                            trials=trials)
    max_abs, max_rel, max_ratio = 0.0, 0.0, 0.0
    deterministic = True
    failure, witness = "", None
    per_trial = []
    for index, (run, ref) in enumerate(zip(result.runs, references)):
        runs_to_check = [("", run.outputs)]
        for label, other in ((" (run 2)", run.second_outputs), (" (rerun)", run.rerun_outputs)):
            if other is not None:
                deterministic = False
                runs_to_check.append((label, other))
        if run.varies_with:
            deterministic = False
        errors, first_bad = TrialErrors(run.trial), {}
        for label, outputs in runs_to_check:
            for spec in specs:
                out = exact_values(outputs[spec.name], spec.dtype, spec.shape)
                stats = error_stats(out, ref[spec.name], spec.bounds[index], spec.dtype)
                max_abs, max_rel = max(max_abs, stats.max_abs_err), max(max_rel, stats.max_rel_err)
                max_ratio = max(max_ratio, stats.max_err_ratio)
                first_bad[spec.name] = errors.add(stats, stats.max_ulp_err,
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
    on_device = any(is_tensor(run.outputs[spec.name]) for run in result.runs for spec in specs)
    if hash_pool is not None and on_device:
        # the bits are copied now, on the device (the worker's memory may not outlive its
        # next job); the hash thread brings them to the host chunk by chunk
        copies = [TrialRun(run.trial, {spec.name: _device_copy(run.outputs[spec.name]) for spec in specs})
                  for run in result.runs]
        digest = hash_pool.submit(output_hash, copies, specs)
    else:
        digest = output_hash(result.runs, specs)
    common = dict(max_abs_err=max_abs, max_rel_err=max_rel, max_err_ratio=max_ratio, trials=trials,
                  deterministic=deterministic, output_hash=digest, trial_errors=per_trial)
    if failure:
        return Verdict("wrong_result", failure, witness=witness, **common)
    note = "" if deterministic else "runs differ bitwise (floating-point atomics; every run within the error bound)"
    outputs = [{spec.name: run.outputs[spec.name] for spec in specs} for run in result.runs]
    return Verdict("passed", note, outputs=outputs, **common)


def disagreement(outputs: list, other: list, specs: list) -> tuple:
    """(max |a - b| / agreement bound over trials and outputs, first failure message or '')."""
    worst, message = 0.0, ""
    for index, (mine, theirs) in enumerate(zip(outputs, other)):
        for spec in specs:
            stats = agreement(exact_values(mine[spec.name], spec.dtype, spec.shape),
                              exact_values(theirs[spec.name], spec.dtype, spec.shape),
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
    reference_ratio: float       # the representative's max |err|/bound against the float64 reference
    order: int                   # creation order, the last tie-break
    members: list = field(default_factory=list)

    def rank(self) -> tuple:
        """Smaller is nearer the consensus: nearest the reference, then larger, then earlier."""
        return (self.reference_ratio, -len(self.members), self.order)


class Consensus:
    """Groups a group's passing members into clusters that agree under the agreement bound,
    keeping one member's outputs per cluster (memory stays bounded by MAX_CLUSTERS).

    The consensus is anchored on the reference: the cluster whose representative is nearest
    the float64 reference (smallest max |err|/bound) wins; cluster size, then creation order,
    only break ties. A consistently skewed member listed first therefore cannot outvote a
    correct one. When every slot is taken, a new cluster whose representative is nearer the
    reference than the farthest kept one replaces it (the farthest can never win); a member
    that fits nowhere and is no nearer than any kept cluster disagrees.
    """

    def __init__(self, specs: list):
        self.specs = specs
        self.clusters: dict = {}  # cluster id -> _Cluster (ids are never reused)
        self.created = 0
        self.ratios: dict = {}    # build_key -> {cluster id: ratio}
        self.messages: dict = {}  # build_key -> {cluster id: message}
        self.home: dict = {}      # build_key -> cluster id, or -1 when no room was left

    def add(self, key: str, outputs: list, reference_ratio: Optional[float] = None) -> None:
        """``reference_ratio``: the member's max |err|/bound against the reference (its
        verdict's ``max_err_ratio``); None ranks it after every known ratio."""
        nearness = math.inf if reference_ratio is None or math.isnan(reference_ratio) else float(reference_ratio)
        ratios, messages = {}, {}
        for cid, cluster in self.clusters.items():
            ratios[cid], messages[cid] = disagreement(outputs, cluster.outputs, self.specs)
        self.ratios[key], self.messages[key] = ratios, messages
        for cid, cluster in self.clusters.items():
            if not messages[cid]:
                cluster.members.append(key)
                self.home[key] = cid
                return
        if len(self.clusters) >= MAX_CLUSTERS:
            farthest = max(self.clusters, key=lambda c: self.clusters[c].rank())
            if nearness >= self.clusters[farthest].reference_ratio:
                self.home[key] = -1
                return
            del self.clusters[farthest]  # its members keep home == farthest: outside the consensus
        cid = self.created
        self.created += 1
        for other, cluster in self.clusters.items():  # disagreement is symmetric: the older representatives learn it too
            self.ratios[cluster.representative][cid] = ratios[other]
            self.messages[cluster.representative][cid] = messages[other]
        self.clusters[cid] = _Cluster(key, own_copy(outputs), nearness, cid, [key])
        self.home[key] = cid
        self.ratios[key][cid] = 0.0

    def consensus_id(self) -> Optional[int]:
        if not self.clusters:
            return None
        return min(self.clusters, key=lambda c: self.clusters[c].rank())

    def consensus(self) -> tuple:
        """(build_key, outputs) of the consensus cluster's representative, or (None, None)."""
        if not self.clusters:
            return None, None
        cluster = self.clusters[self.consensus_id()]
        return cluster.representative, cluster.outputs

    def witness(self, key: str) -> Optional[dict]:
        """Where member ``key`` first leaves the agreement bound around the consensus
        member: trial, output, flat_index, value, consensus_value, bound. Only a cluster's
        representative has its outputs kept; None for other members."""
        rep_key, rep_outputs = self.consensus()
        mine = next((c.outputs for c in self.clusters.values() if c.representative == key), None)
        if mine is None or rep_outputs is None or key == rep_key:
            return None
        for index, (ours, theirs) in enumerate(zip(mine, rep_outputs)):
            for spec in self.specs:
                x, y = (exact_values(ours[spec.name], spec.dtype, spec.shape),
                        exact_values(theirs[spec.name], spec.dtype, spec.shape))
                flat = first_outside(x, y, spec.agreement_bounds[index])
                if flat is not None:
                    return {"trial": index, "output": spec.name, "flat_index": flat, "value": element(x, flat),
                            "consensus_value": element(y, flat),
                            "bound": bound_at(spec.agreement_bounds[index], tuple(np.shape(x)), flat)}
        return None

    def verdicts(self) -> dict:
        """build_key -> (agrees, max_disagreement, message) against the consensus cluster."""
        best = self.consensus_id()
        if best is None:
            return {}
        rep = self.clusters[best].representative
        out = {}
        for key, home in self.home.items():
            ratio = self.ratios[key].get(best)
            if ratio is None and home in self.clusters:  # joined its cluster before the consensus one existed
                ratio = self.ratios[self.clusters[home].representative].get(best)
            known = self.messages[key].get(best)
            if home == best or known == "":
                out[key] = (True, ratio, "")
            else:
                message = known or (
                    f"agrees with another cluster of members, not with the group's consensus (member {rep[:12]}, "
                    "the cluster nearest the reference)")
                out[key] = (False, ratio, f"disagrees with the group's consensus: {message}")
        return out


def inputs_changed(before: dict, after: dict) -> list:
    """Names of buffers whose bits differ between ``before`` and ``after`` (compared as
    bytes, since NaN != NaN; torch tensors on their device)."""
    def raw(array):
        return np.ascontiguousarray(array).reshape(-1).view(np.uint8)

    def same(a, b) -> bool:
        if is_tensor(a) and is_tensor(b):
            return bits_equal(a, b)
        return np.array_equal(raw(_host_bits(a)), raw(_host_bits(b)))
    return [name for name in before if not same(before[name], after[name])]


def _device_copy(array):
    """A device tensor cloned into this process's memory (a host array as it is)."""
    return array.detach().clone() if is_tensor(array) else array


def _host_bits(array) -> np.ndarray:
    """A host array's bits, or a device tensor's copied to the host."""
    if is_tensor(array):
        return host_bits(array)
    return np.ascontiguousarray(array)
