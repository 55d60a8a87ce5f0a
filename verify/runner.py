"""verify_dataset: run every group of a dataset on the GPU, prove equivalence, time members.

Per group: a group whose rows carry different problems is refused (every runnable row
``problem_mismatch``); otherwise inputs drawn once per trial (recorded seeds, kinds and
generators; on the GPU where device_prepare.py can, while the GPU runs the group before),
the float64 reference and the per-element error bound computed once per trial, every
member run in an isolated GPU worker and judged against the reference (and, under
``--sanitize``, under memcheck and racecheck, whose findings set the status), members that
pass timed, then clustered by agreement with each other (the cluster whose representative
is nearest the reference is the consensus; members outside it disagree), then derived
members checked further (coverage probes of mutants; racecheck and delay injection of
members whose change touches synchronisation: race_focus.py, race_delays.py), then the
group's rows written to the output folder in one atomic part. A resumed run skips groups
whose rows are already in the output folder. The input folder is only read.
"""
from __future__ import annotations

import fnmatch
import contextlib
import json
import os
import sys
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np

from dataset_spec.model import KernelRecord, Problem, unverified
from dataset_spec.ops import get_op
from dataset_spec.trials import trial_count
from dataset_spec.store.dataset import Dataset
from dataset_spec.store.group_stats import group_stats

from dataset_spec.numerics import smallest_caught_relative_error
from dataset_spec.one_problem import describe_mismatch, distinct_problems

from .device.assembly_pool import AssemblyPool, runnable_reason
from .judge.compare import agreement_bound, trivial_reason
from .trials.inputs import exact_values, make_trial_inputs
from .trials.device_prepare import (custom_on_device, device_makes, device_supported, make_trial_inputs_device,
                                    out_of_memory, trial_on, trial_reference_on_device)
from .judge.trial_stats import element
from .device.device_outputs import device_inputs
from .judge.judge import device_of, is_tensor, judge_device, on_device
from .trials.reference import choose_backend, evaluating_op, reference_outputs, torch_for
from .timing.timing import TARGET_RSE
from .timing.roofline import judge as roofline_judge
from dataset_spec.work import problem_work
from .options import INPUTS, VerifyOptions
from .judge.outcome import Consensus, OutputSpec, Verdict, classify, launched_code, widest_global_store
from .probes.sanitize import (RACECHECK_FEW_BLOCKS, TOOLS, race_errors, racecheck_record, racing_members,
                       run_sanitizer, sanitizer_status, uses_shared_memory)
from .probes.racecheck_server import RacecheckServers
from .probes.coverage import apply_coverage, explain_survivors, measure_site
from .judge.findings import add_finding
from .probes.race_focus import automatic_sanitizer, barrier_never_ordered, delay_reason, note as racecheck_note, \
    racecheck_reason, synchronous_copy_pair, synchronous_copy_verdict
from .probes.race_delays import CHANGED_ORDER, DROPPED_BARRIER, delay_member_runs, judge_delays
from .schedule import PASS_THROUGH, ChunkQueue, measured_seconds, plan_chunks, row_costs
from .chunk_merge import ChunkResult, chunk_devices, merge_chunks
# Statuses whose rows keep their time: every other status is a failed check, and a time is
# only kept where the kernel was shown to compute the function.
TIMED_STATUSES = ("passed", "unexercised")
TIMING_COLUMNS = ("time_us_median", "time_us_iqr", "time_us_min", "time_samples", "time_method",
                  "time_us_events_median", "time_us_events_iqr", "sm_clock_mhz", "roofline_us", "sol_ratio")
# Trial kinds whose inputs are timed (ordinary data, never the stress rows' special values),
# in order of preference; at least two sets alternate between samples where the plan has them.
TIMING_KINDS = ("normal", "uniform", "wide", "edge")
TIMING_SETS = 2
INPUT_GENERATORS = INPUTS
PREFETCH_GROUPS = 4
# Groups whose inputs, references and bounds are prepared ahead of the GPUs, per GPU worker
# (with several GPUs the queue's front moves that many times faster), and the host threads
# that prepare them: at least PREPARE_THREADS, and one per GPU worker, so each GPU can have a
# preparation in flight (numpy releases the GIL in its array loops; device work waits on its
# GPU). Each group is prepared once, on one GPU; the others get copies (_Run.on_gpu).
PREPARE_AHEAD = 1
PREPARE_THREADS = 2
# Groups per GPU worker whose host-drawn trials (stress rows, users' derived inputs) start
# on the draw threads before their preparation does, while the drawn inputs held stay under
# DRAW_AHEAD_BYTES: at llm sizes a host draw takes seconds of numpy, which then overlap the
# GPUs' work on the groups before them. The draw threads: a quarter of the cores, 2 to 4
# (draws are numpy's generators and elementwise loops, which release the GIL).
DRAW_AHEAD = 4
DRAW_AHEAD_BYTES = 2 << 30
DRAW_THREADS = max(2, min(4, (os.cpu_count() or 2) // 4))
MAX_TIMING_SAMPLES = 2000
# seconds one member may take under the every-member racecheck before it is given up
# (recorded as failed, changing nothing) and the group's other members go on
RACECHECK_MEMBER_SECONDS = 20.0
# racecheck processes per GPU: a member under racecheck runs a few sampled blocks, so several
# members run side by side on one GPU (racecheck_server.RacecheckServers)
RACECHECK_PROCESSES = 4
RACECHECK_KEY = "#racecheck"  # the assembly pool's key suffix for a member's racecheck copy
# Host threads that draw one problem's trials and compute their references and bounds side
# by side (shared by every group being prepared; never waits on itself). Two: with eight, the
# float64 GEMM references of several trials ran in OpenBLAS at once and the process died with
# a segmentation fault on an H100 machine (docs/runs/run-039.md, run 39); more groups ahead
# also held about 9.5 GB of prepared references.
TRIAL_THREADS = 2
_TRIAL_POOL = ThreadPoolExecutor(max_workers=TRIAL_THREADS, thread_name_prefix="verify-trial")
# Rows per GPU thread whose outputs are hashed on host threads (outcome.classify's hash_pool,
# one thread per GPU worker, at least two) while the next member runs
HASHES_IN_FLIGHT = 2  # rows whose host copies wait for their hash: bounds the host memory held


@dataclass
class GroupSummary:
    group_id: str
    members: int
    statuses: dict            # status -> rows, every row of the group (pass-through included)
    all_equivalent: bool      # every runnable member passed (and at least one ran)
    fastest: Optional[str] = None      # name of the fastest passing member
    fastest_us: Optional[float] = None
    slowest_us: Optional[float] = None
    ran: int = 0              # members run on the GPU
    not_runnable: int = 0     # members this GPU cannot run (kept unverified)
    distinct_outputs: int = 0  # distinct output bit patterns among passing members

    @property
    def spread(self) -> Optional[float]:
        """slowest / fastest median time among timed members."""
        if self.fastest_us and self.slowest_us:
            return self.slowest_us / self.fastest_us
        return None

    def verdict_text(self) -> str:
        """One phrase saying what happened to the group."""
        build_side = {k: v for k, v in self.statuses.items() if k in PASS_THROUGH}
        build_note = ", ".join(f"{v} {k}" for k, v in sorted(build_side.items()))
        if not self.ran:
            if self.not_runnable:
                return f"not verified: {self.not_runnable} member(s) cannot run on this GPU" + (
                    f"; {build_note}" if build_note else "")
            return f"no runnable member ({build_note or 'empty group'})"
        if self.all_equivalent:
            text = f"all {self.ran} runnable members equivalent"
            if self.distinct_outputs:
                text += f" ({self.distinct_outputs} distinct output bit pattern(s))"
            return text + (f"; not run: {build_note}" if build_note else "")
        failed = {k: v for k, v in self.statuses.items()
                  if k not in PASS_THROUGH + ("passed", "unexercised", "not_runnable")}
        return ("NOT all equivalent: " + ", ".join(f"{v} {k}" for k, v in sorted(failed.items()))
                + f" of {self.ran} run" + (f"; not run: {build_note}" if build_note else ""))


@dataclass
class VerifySummary:
    groups: list = field(default_factory=list)       # GroupSummary per verified group
    counts: dict = field(default_factory=dict)       # status -> rows (this run)
    skipped_groups: int = 0                          # already in out_dir (resumed)
    not_runnable: int = 0                            # rows this GPU cannot run
    gpu_name: str = ""
    # seconds of the GPU threads' wall time per stage: run (in the worker process, split
    # into run.load/upload/kernel/download/compare; the rest of run is moving the job and
    # its outputs between processes), judge (checks and agreement), time, wait_prepare
    # (inputs and references not ready yet), copy (a group prepared on another GPU copied to
    # this one), wait_coverage; and, summed over the host threads that prepare groups rather
    # than the GPU threads, prepare.draw.device, prepare.draw.host, prepare.reference and
    # prepare.coverage (where a group's preparation goes)
    stage_seconds: dict = field(default_factory=dict)
    # peak resident memory (MiB) of each GPU worker process and of this process, from getrusage
    worker_peak_rss_mib: list = field(default_factory=list)
    parent_peak_rss_mib: float = 0.0
    chunks: int = 0                 # pieces the groups were verified in (one per group on one GPU)
    split_groups: int = 0           # groups whose members were spread over several chunks
    wall_seconds: float = 0.0       # from the first chunk taken to the last group written
    gpu_busy_seconds: list = field(default_factory=list)  # per GPU worker, seconds spent on chunks

    def format(self) -> str:
        lines = [f"verified {len(self.groups)} group(s) on {self.gpu_name or 'no GPU'}; "
                 f"{self.skipped_groups} already done; {self.not_runnable} row(s) not runnable here"]
        lines.append("status counts: " + ", ".join(f"{k}={v}" for k, v in sorted(self.counts.items())))
        if self.split_groups:
            lines.append(f"{self.split_groups} group(s) split: {self.chunks} chunks over "
                         f"{len(self.gpu_busy_seconds)} GPU worker(s), busy "
                         + ", ".join(f"{s:.1f}" for s in self.gpu_busy_seconds) + f" s of {self.wall_seconds:.1f} s")
        if self.stage_seconds:
            lines.append("seconds per stage: " + ", ".join(
                f"{k} {v:.1f}" for k, v in sorted(self.stage_seconds.items(), key=lambda kv: -kv[1])))
        for g in self.groups:
            spread = f", spread {g.spread:.2f}x" if g.spread else ""
            fastest = f", fastest {g.fastest} ({g.fastest_us:.2f} us)" if g.fastest else ""
            lines.append(f"  {g.group_id}: {g.members} members, {g.verdict_text()}{fastest}{spread}")
        return "\n".join(lines)


@dataclass
class _ProblemTrials:
    """Everything a problem's members are judged against, computed once per group."""
    problem: Problem
    trials: list          # inputs.TrialInputs
    references: list      # per trial: name -> float64
    specs: list           # OutputSpec per out/inout buffer, with per-trial bounds
    refusal: str = ""     # why the group cannot be verified (trivial or failing reference)
    refusal_status: str = ""
    catches_rel_err: Optional[float] = None  # smallest uniform relative error the bound catches
    tolerance: Optional[tuple] = None  # (atol, rtol) when the problem replaces the bound with them
    bound_note: str = ""  # the bound's coefficients per output, for provenance
    salt: str = ""        # the run's trial salt, mixed into the seeds (inputs.trial_seed)
    device: Optional[object] = None  # the torch device the trials and references were made on (None: the host)
    _host_storage: Optional[list] = None
    _first_host_storage: Optional[dict] = None  # the first trial's alone (first_host_storage)
    _coverage: Optional[dict] = None
    _coverage_pending: Optional[Future] = None  # the measure running on a host thread (_Run)
    _download_lock: Optional[object] = None  # the quiet lock of ``device``, held while its trials are downloaded

    def coverage(self, on_host: Optional[tuple] = None) -> dict:
        """{coverage item: count} the group's trials drew (dataset_spec/coverage.py),
        measured once per group (``on_host``: (trials, references) already copied to the
        host); {} where the group was refused before its references. Where a host thread
        measures it (``_coverage_pending``), its answer is waited for."""
        if self._coverage is None and self._coverage_pending is not None:
            self._coverage_pending.result()
        if self._coverage is None:
            self._coverage = self.measure_coverage(on_host)
        return self._coverage

    def measure_coverage(self, on_host: Optional[tuple] = None, on_device=None) -> dict:
        """The coverage counts, measured now (``coverage`` keeps them); ``on_device``: how
        counts of tensors are run (dataset_spec.coverage.measure)."""
        from dataset_spec.coverage import measure_trials
        trials, references = on_host or (self.trials, self.references)
        try:
            return measure_trials(self.problem, trials, references, on_device=on_device) if self.references else {}
        except Exception as exc:  # a measure that fails must not fail the group's rows
            return {"error": f"{type(exc).__name__}: {exc}"[:300]}

    def host_storage(self) -> list:
        """Per trial, the input storage arrays on the host (downloaded once from the device
        where the trials were made there, under that GPU's quiet lock: whichever GPU thread
        asks, the GPU that made them may be timing; only the host path and the sanitizer
        need them)."""
        if self._host_storage is None:
            with self._download_lock or contextlib.nullcontext():
                if self._host_storage is None:
                    first = self._first_host_storage
                    self._host_storage = [first if i == 0 and first is not None else t.host_storage()
                                          for i, t in enumerate(self.trials)]
        return self._host_storage

    def first_host_storage(self) -> dict:
        """The first trial's input storage on the host, for the work that runs that trial
        alone (sanitizers, delayed copies): ``host_storage``'s where every trial is already
        on the host, else that trial downloaded alone (the group's other trials stay on
        the device)."""
        if self._host_storage is not None:
            return self._host_storage[0]
        if self._first_host_storage is None:
            with self._download_lock or contextlib.nullcontext():
                if self._first_host_storage is None and self._host_storage is None:
                    self._first_host_storage = self.trials[0].host_storage()
        return self._host_storage[0] if self._host_storage is not None else self._first_host_storage


def prepare_device(problem: Problem, reference: str = "auto", inputs: str = "auto", ordinal: int = 0):
    """The torch device where ``problem``'s inputs, references and bounds are made for the
    members judged on GPU ``ordinal`` (that GPU, for the ops device_prepare.py knows), or
    None for the host. ``inputs``: auto (the device where it can), or host (the host
    generator). A group split over several GPUs is prepared on each of them: the inputs
    are a pure function of the trial's seed (device_rng.py), so every GPU draws the same
    bits and computes the same reference."""
    if inputs not in INPUT_GENERATORS:
        raise ValueError(f"inputs must be one of {INPUT_GENERATORS}, got {inputs!r}")
    if inputs == "host":
        return None
    if custom_on_device(problem):  # its plain draws, function and bounds on the judging GPU
        return judge_device(problem, reference, ordinal)
    if not device_supported(problem):
        return None
    device = judge_device(problem, reference, ordinal)
    if device is None and choose_backend(problem.op, problem, reference) == "torch":
        # outputs too small to judge on the GPU, but a float64 reference large enough to
        # compute there (a decode GEMM, M=16): made there, and then judged there too
        torch = torch_for(reference)
        device = torch.device("cuda", int(ordinal) % max(1, torch.cuda.device_count()))
    return device


def host_references(prepared: _ProblemTrials, judged: _ProblemTrials) -> list:
    """The references a failing member's witness is read from: the prepared ones (the host's
    exact float64 where the group was made there), or the judged copy where the group was
    made on another GPU than the one judging it (the same bits, on the judging GPU)."""
    made, judging = prepared.device, device_of(*(judged.references[0].values() if judged.references else ()))
    if made is not None and judging is not None and str(made) != str(judging):
        return judged.references
    return prepared.references


def _worker_gpu_if_made_on_device(prepared, ordinal: int):
    """The GPU of worker ``ordinal`` when ``prepared``'s references are tensors (made on
    the device), else None: they are judged where they are, not brought back."""
    made = prepared.references[0] if prepared.references else {}
    if not any(is_tensor(value) for value in made.values()):
        return None
    torch = torch_for("auto")
    return torch.device("cuda", int(ordinal) % max(1, torch.cuda.device_count()))


def prepare_problem(problem: Problem, group_id: str, n_trials: Optional[int] = None,
                    reference: str = "auto", device=None, quiet_gpu=None, host_trial=None,
                    salt: str = "", *, trial_pool: Optional[ThreadPoolExecutor] = None,
                    measure_coverage: bool = True, phases: Optional[Counter] = None) -> _ProblemTrials:
    """Draw inputs, compute references and per-element error bounds for every trial (one
    trial per trial kind when ``n_trials`` is None); refuse trivial references.
    ``reference``: where the float64 reference runs (see reference.py). ``device``: a
    torch device that makes the trials it can (device_prepare.py; inputs from the
    counter-based generator, references and bounds as tensors there), None for the host.
    ``quiet_gpu``: a lock held while a member is timed; the device's work is done under it
    (and finished before it is released), so no kernel of ours runs beside a timed one.
    ``host_trial(problem, group_id, trial)``: a Future of a trial drawn on the host (default:
    drawn now on the trial threads); a group prepared on several GPUs shares these draws.
    ``salt``: the run's trial salt (inputs.trial_seed). ``trial_pool``: the threads that
    evaluate a device's trials (default: the host's trial threads; the runner gives each GPU
    its own, so GPUs preparing side by side do not queue behind each other).
    ``measure_coverage``: False leaves the coverage measure to the caller (the runner runs it
    on a host thread of its own, off the path to the group's first member). ``phases``: where
    given, gets the seconds of the draws made on the device (``draw.device``), the wait for
    the host's draws after them (``draw.host``) and the references and bounds (``reference``)."""
    phases = Counter() if phases is None else phases
    started = time.perf_counter()
    quiet = _quietly(device, quiet_gpu)
    device_pool = trial_pool if device is not None and trial_pool is not None else _TRIAL_POOL
    host_trial = host_trial or (lambda p, g, t: _TRIAL_POOL.submit(make_trial_inputs, p, g, t, salt))
    op = evaluating_op(get_op(problem.op), reference, quiet_gpu)  # a user's reference: GPU and cache
    n_trials = n_trials or trial_count(problem)
    if device is not None:
        # trials the device cannot make wholly (host-made stress rows) are drawn on the host
        # threads meanwhile; the device draws the others in order (its kernels queue anyway)
        on_host = {t: host_trial(problem, group_id, t) for t in range(n_trials) if not device_makes(problem, t)}
        made = {t: quiet(make_trial_inputs_device, problem, group_id, t, device, salt)
                for t in range(n_trials) if t not in on_host}
        phases["draw.device"] += time.perf_counter() - started
        started = time.perf_counter()
        trials = [made[t] if t in made else on_host[t].result() for t in range(n_trials)]
        phases["draw.host"] += time.perf_counter() - started
    else:
        trials = list(_TRIAL_POOL.map(lambda t: make_trial_inputs(problem, group_id, t, salt), range(n_trials)))
        phases["draw.host"] += time.perf_counter() - started
    started = time.perf_counter()
    specs = [OutputSpec(b.name, b.dtype, shape=b.shape) for b in problem.buffers if b.role in ("out", "inout")]
    prepared = _ProblemTrials(problem, trials, [], specs, salt=salt, device=device,
                              _download_lock=quiet_gpu if device is not None else None)
    fixed = {s.name: op.tolerance(problem, s.dtype) for s in specs}
    prepared.tolerance = next(iter(fixed.values()), None)
    terms = {s.name: None if fixed[s.name] else op.bound_terms(problem, s.dtype) for s in specs}
    prepared.bound_note = "; ".join(
        f"{s.name}: " + (f"fixed atol={fixed[s.name][0]:.3g} rtol={fixed[s.name][1]:.3g}" if fixed[s.name]
                         else terms[s.name].describe()) for s in specs)
    # The trials are drawn and judged-for in parallel (numpy releases the GIL in its array
    # loops), then taken in trial order, so the first refusal is the one a serial pass finds.
    try:
        results = list(device_pool.map(lambda trial: quiet(_trial_reference, op, problem, trial, specs, terms,
                                                            reference, device), trials))
    except Exception as exc:
        if device is None or not out_of_memory(exc):
            raise
        # a float64 reference (or its scale's temporaries) larger than the GPU's free memory:
        # the group is prepared on the host instead, its references then copied where judged
        del trials, prepared
        _release_cached_memory(device)
        on_host = prepare_problem(problem, group_id, n_trials, "numpy", None, quiet_gpu, host_trial, salt,
                                  measure_coverage=measure_coverage, phases=phases)
        on_host.bound_note += f"; prepared on the host: the GPU ran out of memory for the references ({exc})"[:400]
        return on_host
    phases["reference"] += time.perf_counter() - started
    catches = []
    trivial = {spec.name: [] for spec in specs}  # output -> why each trial could not tell
    for trial, (shaped, per_spec, refusal) in zip(trials, results):
        if refusal:
            prepared.refusal = refusal
            return prepared
        for spec in specs:
            bound, agree, reason, caught = per_spec[spec.name]
            if reason:
                trivial[spec.name].append(f"trial {trial.trial} ({trial.kind}): output {spec.name}: {reason}")
            spec.bounds.append(bound)
            spec.agreement_bounds.append(agree)
            if caught is not None:
                catches.append(caught)
        prepared.references.append(shaped)
    # A trial whose reference a constant would match cannot tell such a kernel from the
    # function, but the other trials can: only an output no trial tells apart is refused
    # (a 1-D stress row of one value, or an isinf() flag that is 0 on finite draws, is not).
    informative = [spec.name for spec in specs if len(trivial[spec.name]) < len(trials)]
    for spec in specs:
        if trials and len(trivial[spec.name]) == len(trials):
            if informative and input_independent(spec.name, prepared.references):
                # Welford's count beside its mean and M2: a function of the shape alone,
                # judged exactly; the outputs beside it still need the work
                prepared.bound_note += (f"; {spec.name}: the same non-zero value in every trial, "
                                        "whatever the inputs (judged, not counted as evidence)")
                continue
            prepared.refusal = trivial[spec.name][0] + " (and in every other trial)" * (len(trials) > 1)
            prepared.refusal_status = "trivial_reference"
            return prepared
    prepared.catches_rel_err = max(catches) if catches else None
    if measure_coverage:
        prepared._coverage = coverage_of(prepared, quiet_gpu)
    return prepared


def _release_cached_memory(device) -> None:
    """Hands torch's cached blocks on ``device`` back to the driver (after an out-of-memory)."""
    if getattr(device, "type", "") == "cuda":
        import torch
        torch.cuda.empty_cache()


def input_independent(name: str, references: list) -> bool:
    """Whether output ``name`` is one identical, finite, not all-zero array in every trial
    (trials draw very different inputs, so such an output is a function of the shape: a
    count). An all-zero output is not: a flag that stays 0 only because no draw sets it
    (``isinf(x).any()`` on finite inputs) must not pass unexercised."""
    arrays = []
    for shaped in references:
        value = shaped[name]
        arrays.append(value.detach().cpu().numpy() if hasattr(value, "detach") else np.asarray(value))
    if len(arrays) < 2 or not np.all(np.isfinite(arrays[0])) or not np.any(arrays[0]):
        return False
    return all(np.array_equal(arrays[0], other) for other in arrays[1:])


def gpu_identity(worker):
    """The physical GPU ``worker`` runs on: its ``gpu_identity`` where it has one (a Ray
    actor's node and PCI bus id: another node's GPU may have this process's ordinal), else
    its ordinal on this host."""
    return getattr(worker, "gpu_identity", None) or int(getattr(worker, "ordinal", 0))


def coverage_of(prepared: _ProblemTrials, quiet_gpu=None) -> dict:
    """The coverage measure of a prepared problem (at llm sizes seconds of host work, so the
    runner runs it on a host thread while the GPUs work). Buffers on a GPU are counted there
    (dataset_spec/coverage_tensor.py: a few reductions each) under ``quiet_gpu``, so nothing
    runs beside a timed member, instead of copying every trial's float64 values back; the
    host's arrays are counted without holding it (a timed member must not wait for host
    work). A refused problem is measured on what it made before its refusal."""
    return prepared.measure_coverage(None, on_device=_quietly(prepared.device, quiet_gpu))


def _quietly(device, lock):
    """A caller of functions that run on ``device``: under ``lock``, waiting for the device
    before releasing it (a plain call without a CUDA device or a lock)."""
    if device is None or lock is None or getattr(device, "type", "") != "cuda":
        return lambda fn, *args: fn(*args)

    def call(fn, *args):
        import torch
        with lock:
            try:
                return fn(*args)
            finally:
                torch.cuda.synchronize(device)
    return call


def _trial_reference(op, problem: Problem, trial, specs: list, terms: dict, reference: str,
                     device=None) -> tuple:
    """One trial's (reference per output, per output (bound, agreement bound, trivial
    reason, smallest caught relative error or None), refusal or ''). With ``device``, a
    trial made on the host is uploaded and evaluated there too."""
    if device is not None:
        return trial_reference_on_device(op, problem, trial_on(trial, device), specs, terms)
    try:
        ref = reference_outputs(op, dict(trial.values), problem, reference)
        shaped = {}
        for spec in specs:
            if spec.name not in ref:
                return {}, {}, f"reference returned no value for output {spec.name}"
            shaped[spec.name] = np.asarray(ref[spec.name], dtype=np.float64).reshape(problem.buffer(spec.name).shape)
        bounds = op.bounds(dict(trial.values), problem, shaped)
    except Exception as exc:
        return {}, {}, f"reference failed: {type(exc).__name__}: {exc}"
    per_spec = {}
    for spec in specs:
        bound = np.broadcast_to(bounds[spec.name], shaped[spec.name].shape)
        reason = trivial_reason(shaped[spec.name], bound)
        caught = (smallest_caught_relative_error(shaped[spec.name], bound)
                  if trial.kind in ("normal", "uniform") and not reason else None)
        per_spec[spec.name] = (bound, agreement_bound(shaped[spec.name], bound, terms[spec.name]), reason, caught)
    return shaped, per_spec, ""


def fill_coverage(rows: list, prepared_by_digest: dict) -> None:
    """Rows written with ``apply_verdict(coverage=False)`` get their problem's coverage counts
    (waiting for the measure where it still runs)."""
    for row in rows:
        verify = (row.provenance or {}).get("verify")
        if verify is None or "coverage" not in verify or verify["coverage"] is not None:
            continue
        prepared = prepared_by_digest.get(row.problem.digest()) if row.problem is not None else None
        if prepared is not None:
            verify["coverage"] = prepared.coverage()


def apply_verdict(row: KernelRecord, verdict: Verdict, prepared: _ProblemTrials, gpu: dict,
                  load_path: str = "", load_note: str = "", coverage: bool = True) -> KernelRecord:
    """The row with the verifier's columns filled in from ``verdict``. ``coverage``: False
    leaves ``provenance.verify.coverage`` None, for ``fill_coverage`` once the group's
    measure is done (the runner does not wait for it per member)."""
    row = unverified(row)
    add_finding(row, "checks", verdict.status, verdict.message)
    row.max_abs_err, row.max_rel_err = verdict.max_abs_err, verdict.max_rel_err
    row.max_err_ratio, row.output_hash = verdict.max_err_ratio, verdict.output_hash
    row.catches_rel_err = prepared.catches_rel_err
    if prepared.tolerance:
        row.atol, row.rtol = prepared.tolerance
    row.trials, row.deterministic = verdict.trials or None, verdict.deterministic
    by_trial = {t.trial: t for t in prepared.trials}
    if verdict.trial_errors is not None:
        row.trial_errors = [{**errors, "kind": by_trial[errors["trial"]].kind, "seed": by_trial[errors["trial"]].seed}
                            for errors in verdict.trial_errors]
    if verdict.witness is not None:
        trial = by_trial.get(verdict.witness.get("trial"))
        row.witness = {**verdict.witness, "kernel_id": row.kernel_id,
                       "kind": trial.kind if trial else None, "seed": trial.seed if trial else None}
    row.gpu_name, row.driver_version = gpu.get("name"), gpu.get("driver_version")
    row.provenance["verify"] = {
        "seeds": [t.seed for t in prepared.trials], "trial_kinds": [t.kind for t in prepared.trials],
        **({"trial_salt": prepared.salt} if prepared.salt else {}),
        # per trial, the generator that drew its inputs (inputs.HOST_GENERATOR, device_rng.GENERATOR)
        "input_generators": [t.generator for t in prepared.trials],
        # per trial, what each input was drawn over (integers inclusive, float magnitudes)
        "input_ranges": [t.ranges or {} for t in prepared.trials],
        "error_bound": prepared.bound_note, "gpu": gpu.get("pci_bus_id"),
        "load": load_path, **({"load_note": load_note[:1000]} if load_note else {}),
        # per coverage item of the op (dataset_spec/coverage.py), how often the trials drew it
        "coverage": prepared.coverage() if coverage else None,
    }
    return row


def problem_mismatch(group_id: str, rows: list) -> str:
    """One line when the group's rows carry different problems, else ''."""
    problems = distinct_problems(row.problem for row in rows if row.status not in PASS_THROUGH)
    return describe_mismatch(group_id, problems) if len(problems) > 1 else ""


def refuse_group(rows: list, message: str, gpu: dict) -> tuple:
    """Every runnable row ``problem_mismatch`` with ``message``; pass-through rows as they were."""
    out_rows, results = [], {}
    for row in rows:
        if row.status in PASS_THROUGH:
            out_rows.append(row)
            continue
        row = unverified(row)
        add_finding(row, "checks", "problem_mismatch", message)
        row.gpu_name, row.driver_version = gpu.get("name"), gpu.get("driver_version")
        out_rows.append(row)
        results[row.build_key] = "problem_mismatch"
    return out_rows, results


def apply_sanitizer_status(row: KernelRecord, found: Optional[tuple], check: str = "memcheck") -> None:
    """A memcheck finding (status, message), recorded; it replaces the statuses it explains
    (verify/findings.SANITIZER_REPLACES), and the earlier status stays in the message."""
    if found:
        add_finding(row, check, *found)


def apply_race_statuses(out_rows: list, results: dict, racing: dict) -> None:
    """Members with racecheck hazards the group's other members lack become race_detected."""
    for row in out_rows:
        if row.build_key in racing and add_finding(row, "racecheck", "race_detected", racing[row.build_key]):
            results[row.build_key] = row.status


def add_consensus_witnesses(out_rows: list, consensus_by_digest: dict, prepared_by_digest: dict) -> None:
    """Witnesses beside the consensus: a wrong member's witness gets the consensus member's
    value at its element; a member that disagrees gets its first element outside the
    agreement bound (when its outputs were kept: one representative per cluster)."""
    kernel_of = {row.build_key: row.kernel_id for row in out_rows}
    for row in out_rows:
        digest = row.problem.digest()
        consensus, prepared = consensus_by_digest.get(digest), prepared_by_digest.get(digest)
        if consensus is None or prepared is None or row.status in PASS_THROUGH:
            continue
        rep_key, rep_outputs = consensus.consensus()
        if row.status == "disagrees":
            found = consensus.witness(row.build_key) or {"reason": row.status_message}
            trial = prepared.trials[found["trial"]] if "trial" in found else None
            row.witness = {"output": None, "trial": None, **found, "kernel_id": row.kernel_id,
                           "kind": trial.kind if trial else None, "seed": trial.seed if trial else None,
                           "reason": row.status_message}
            if trial is not None and prepared.references:
                row.witness["reference"] = element(prepared.references[found["trial"]][found["output"]],
                                                   found["flat_index"])
        witness = row.witness
        if witness and witness.get("flat_index") is not None and rep_outputs is not None:
            spec = next(s for s in consensus.specs if s.name == witness["output"])
            bits = rep_outputs[witness["trial"]][spec.name]
            witness["consensus_kernel_id"] = kernel_of.get(rep_key)
            values = exact_values(bits, spec.dtype, spec.shape)
            witness["consensus_value"] = float(values.reshape(-1)[witness["flat_index"]])


@dataclass
class _OpenGroup:
    """A group some of whose chunks are verified: their results, by chunk index."""
    count: int
    done: dict = field(default_factory=dict)


@dataclass
class _OnGpu:
    """A prepared problem where one GPU judges its members: ``judged`` (references and
    bounds on that GPU) and, where inputs reach the worker as device tensors, ``inputs``
    (per trial, the input storage as byte tensors there)."""
    judged: _ProblemTrials
    inputs: Optional[list] = None


def _gpu_ordinal(device) -> Optional[int]:
    """The GPU ordinal of a torch device (None for the host or the CPU)."""
    if device is None or getattr(device, "type", "cpu") == "cpu":
        return None
    return int(device.index or 0)


class RunStopped(Exception):
    """Raised in a GPU thread once the run is stopping: its group is left unwritten."""


def drawn_bytes(problem: Problem) -> int:
    """Bytes one host-drawn trial of ``problem`` holds: each input's storage and float64 values."""
    return sum(int(buf.numel) * 8 + buf.nbytes for buf in problem.buffers if buf.role in ("in", "inout"))


def prepare_threads(gpu_workers: int) -> int:
    """Host threads preparing groups for ``gpu_workers`` GPU workers: one per worker, at
    least PREPARE_THREADS."""
    return max(PREPARE_THREADS, int(gpu_workers))


class _Run:
    """One verify_dataset call: shared state of the GPU threads. ``chunks``: the queue's
    plan (schedule.plan_chunks; None: each group whole, in order). ``ordinals``: the GPU
    ordinal of each GPU worker (default: one worker on GPU 0); ``gpu_ids``: the physical GPU of
    each (``gpu_identity``; default: the ordinals)."""

    def __init__(self, groups: list, out_dir: Path, options: VerifyOptions, pool: Optional[AssemblyPool],
                 gpu_cc: tuple, progress_bar, sanitizer: Optional[str] = None, chunks: Optional[list] = None,
                 ordinals: Optional[list] = None, carried_splits: Optional[dict] = None,
                 gpu_ids: Optional[list] = None):
        self.options = options
        inputs, device_outputs, racecheck = options.inputs, options.device_outputs, options.racecheck
        self.groups = groups
        self.queue = ChunkQueue(chunks if chunks is not None else plan_chunks([[0.0] * len(rows) for _, rows in groups], 1))
        self.open_groups: dict = {}  # group index -> _OpenGroup
        self.gpu_busy: Counter = Counter()  # GPU thread name -> seconds verifying chunks and finishing groups
        self.inputs = inputs
        self.device_outputs = device_outputs
        self.sanitizer = sanitizer  # compute-sanitizer's path when --sanitize, else None
        # racecheck for members whose change may race (race_focus), --sanitize or not
        self.race_sanitizer, self.race_missing = (sanitizer, "") if sanitizer else automatic_sanitizer()
        self.racecheck_every_member = racecheck
        self.racecheck_servers: dict = {}  # id(worker) -> RacecheckServers, for the run
        # set when the run is stopped (Ctrl-C, SIGTERM): no chunk is taken and no group written after
        # it, so a member whose worker the same signal killed is never written as a crash
        self.stopping = threading.Event()
        self.trial_salt = options.trial_salt
        self.trials = options.trials
        self.reference = options.reference
        self.timing = options.timing
        self.kernel_timeout = options.kernel_timeout
        self.time_budget = options.time_budget
        self.pool = pool
        self.cc = gpu_cc
        # a verified row stays in the split its build wrote it to
        self.writer = Dataset(out_dir).writer(carried_splits=carried_splits)
        self.lock = threading.Lock()
        self.submitted: set = set()  # (group index, start) of chunks whose rows went to the assembly pool
        self.summaries: dict = {}
        self.counts: Counter = Counter()
        self.not_runnable = 0
        self.bar = progress_bar
        self.error: Optional[BaseException] = None
        self.stage_seconds: Counter = Counter()  # where the GPU threads' wall time went
        self.ordinals = [int(o) for o in (ordinals if ordinals else [0])]
        workers = len(self.ordinals)
        # Each group is prepared once, on one GPU (or the host), whichever GPUs verify its
        # chunks; a GPU judging a chunk of a group prepared on another gets a copy (on_gpu).
        self.preparing: dict = {}  # (group_id, problem digest) -> Future of _ProblemTrials
        self.on_gpus: dict = {}    # (group_id, problem digest, judging device) -> Future of _OnGpu
        self.preparing_on: Counter = Counter()  # GPU ordinal -> preparations queued or running there
        self.host_trials: dict = {}  # (group_id, problem digest, trial) -> Future of a host-drawn trial
        self.prepare_pool = ThreadPoolExecutor(max_workers=prepare_threads(workers),
                                               thread_name_prefix="verify-prepare")
        # the coverage measures (host work, seconds per group at llm sizes), off the path to
        # a group's first member: one thread per GPU worker keeps up with the GPUs
        self.coverage_pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="verify-coverage")
        # host-drawn trials of device-prepared groups (the stress rows), several groups at once
        self.draw_pool = ThreadPoolExecutor(max_workers=max(DRAW_THREADS, workers), thread_name_prefix="verify-draw")
        self.host_trial_bytes: dict = {}  # host_trials' key -> bytes its drawn inputs hold
        self.drawn_ahead: set = set()  # groups whose host-drawn trials were started ahead
        self.hash_pool = ThreadPoolExecutor(max_workers=max(2, workers), thread_name_prefix="verify-hash")
        # finished groups whose coverage measure still runs are written here when it ends
        self.write_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="verify-write")
        self.writes: list = []  # Futures of those writes
        self.device_trial_pools: dict = {}  # str(device) -> the threads evaluating that GPU's trials
        # per GPU ordinal, held while a member is timed there: the next group's inputs and
        # references made on that GPU meanwhile would run beside the timed kernel
        self.quiet_locks: dict = {}
        # GPU workers sharing one GPU (more workers than GPUs) take turns there, a chunk at a
        # time, while timing is on: another worker's checks beside a timed member would make
        # its time the busy GPU's. With --no-timing they run side by side.
        gpus = Counter(gpu_ids if gpu_ids else self.ordinals)
        self.gpu_turns = {gpu: threading.Lock() for gpu, n in gpus.items() if n > 1 and self.timing}

    def close(self) -> None:
        """Stops the run's host threads (work not started is dropped)."""
        for executor in [self.prepare_pool, self.coverage_pool, self.draw_pool, self.hash_pool, self.write_pool,
                         *self.device_trial_pools.values()]:
            executor.shutdown(wait=False, cancel_futures=True)

    def take(self, ordinal: int = 0):
        """The next chunk from the shared queue (None when it is empty or a thread failed);
        also keeps assembly PREFETCH_GROUPS chunks ahead of the GPUs, and the preparation of
        inputs and references PREPARE_AHEAD groups per GPU worker ahead (each group once,
        whichever GPU asks: a free GPU takes the next chunk, so the next groups are the ones
        the GPUs verify next)."""
        if self.error is not None or self.stopping.is_set():
            return None
        chunk = self.queue.take()
        if chunk is None:
            return None
        ahead_groups = PREPARE_AHEAD * len(self.ordinals)
        ahead = self.queue.upcoming(max(PREFETCH_GROUPS, 8 * ahead_groups))
        with self.lock:
            for later in [chunk] + ahead[:PREFETCH_GROUPS]:
                if self.pool is not None and (later.group, later.start) not in self.submitted:
                    self.submitted.add((later.group, later.start))
                    for row in self.groups[later.group][1][later.start:later.stop]:
                        if row.status not in PASS_THROUGH:
                            self.pool.submit(row)
            groups = [chunk.group]
            for later in ahead:
                if len(groups) > ahead_groups:
                    break
                if later.group not in groups:
                    groups.append(later.group)
            for index in groups:
                group_id, rows = self.groups[index]
                first = chunk.start if index == chunk.group else 0
                for row in rows[first:]:
                    if self._runs_here(row):
                        self._prepare_future(group_id, row.problem, ordinal)
            self._draw_ahead([chunk] + ahead, ordinal)
        return chunk

    def _runs_here(self, row: KernelRecord) -> bool:
        """Whether ``row`` is run on this run's GPUs (not passed through, and runnable there)."""
        return row.status not in PASS_THROUGH and not runnable_reason(row.arch, self.cc)

    def _draw_ahead(self, chunks: list, ordinal: int) -> None:
        """Starts the host-drawn trials of the next DRAW_AHEAD groups per GPU worker among
        ``chunks`` whose problems are prepared on a GPU (their other trials are drawn there
        when the preparation starts). Called under the lock."""
        groups = list(dict.fromkeys(chunk.group for chunk in chunks))[:DRAW_AHEAD * len(self.ordinals)]
        for index in groups:
            if index in self.drawn_ahead:
                continue
            self.drawn_ahead.add(index)
            group_id, rows = self.groups[index]
            problems = {row.problem.digest(): row.problem for row in rows if self._runs_here(row)}
            for problem in problems.values():
                if prepare_device(problem, self.reference, self.inputs, ordinal) is None:
                    continue
                for trial in range(self.trials or trial_count(problem)):
                    if not device_makes(problem, trial):
                        if sum(self.host_trial_bytes.values()) + drawn_bytes(problem) > DRAW_AHEAD_BYTES:
                            return  # drawn when its preparation starts
                        self._host_trial_locked(problem, group_id, trial)

    def quiet_gpu(self, ordinal: int) -> threading.Lock:
        """The lock held while a member is timed on GPU ``ordinal``."""
        return self.quiet_locks.setdefault(int(ordinal), threading.Lock())  # setdefault is atomic under the GIL

    @contextlib.contextmanager
    def quiet_gpus(self, devices):
        """Holds the quiet locks of the GPUs among ``devices`` (torch devices; None and the
        CPU are skipped) in ordinal order, so two threads taking several never wait on each
        other, and waits for the CUDA ones before releasing them: a copy from one GPU to
        another reads one and writes the other, and neither may be timing meanwhile."""
        devices = [d for d in devices if _gpu_ordinal(d) is not None]
        with contextlib.ExitStack() as held:
            for ordinal in sorted({_gpu_ordinal(d) for d in devices}):
                held.enter_context(self.quiet_gpu(ordinal))
            try:
                yield
            finally:
                cuda = [d for d in devices if getattr(d, "type", "") == "cuda"]
                if cuda:
                    import torch
                    for device in cuda:
                        torch.cuda.synchronize(device)

    @contextlib.contextmanager
    def stopwatch(self, stage: str):
        """Adds the block's wall time to ``stage_seconds[stage]`` (summed over GPU threads)."""
        start = time.perf_counter()
        try:
            yield
        finally:
            with self.lock:
                self.stage_seconds[stage] += time.perf_counter() - start

    def _prepare_future(self, group_id: str, problem: Problem, ordinal: int = 0):
        """The Future of a group's prepared problem (inputs, references, bounds), started on a
        host thread if it was not yet, so that this work overlaps the GPUs' work on the
        chunks before it. Prepared once per group and problem, however many GPUs verify its
        chunks: on a GPU where prepare_device says so (the one with the fewest preparations
        queued, GPU ``ordinal`` on a tie, so several groups are prepared on several GPUs at
        once), else on the host. Called under the lock."""
        key = (group_id, problem.digest())
        if key not in self.preparing:
            device = prepare_device(problem, self.reference, self.inputs, ordinal)
            home = None
            if device is not None:
                home = min(dict.fromkeys(self.ordinals),
                           key=lambda o: (self.preparing_on[o], o != int(ordinal), o))
                device = prepare_device(problem, self.reference, self.inputs, home)
                self.preparing_on[home] += 1
            # a host-made group's custom reference may still run on GPU 0 (reference.evaluating_op)
            lock = self.quiet_gpu(_gpu_ordinal(device) or 0)
            self.preparing[key] = self.prepare_pool.submit(self._prepare, problem, group_id, device, lock, home)
        return self.preparing[key]

    def _prepare(self, problem: Problem, group_id: str, device, lock, home: Optional[int]) -> _ProblemTrials:
        """One group's preparation (a prepare thread's task); its coverage measure then goes to
        a coverage thread, so the GPUs need not wait for it."""
        phases = Counter()
        try:
            prepared = prepare_problem(problem, group_id, self.trials, self.reference, device, lock,
                                       self._host_trial, self.trial_salt, trial_pool=self._trial_pool(device),
                                       measure_coverage=False, phases=phases)
        finally:
            with self.lock:  # seconds of the prepare threads, not of the GPU threads
                for phase, seconds in phases.items():
                    self.stage_seconds[f"prepare.{phase}"] += seconds
            if home is not None:
                with self.lock:
                    self.preparing_on[home] -= 1
        prepared._coverage_pending = self.coverage_pool.submit(self._measure_coverage, prepared, lock)
        return prepared

    def _measure_coverage(self, prepared: _ProblemTrials, lock) -> None:
        start = time.perf_counter()
        prepared._coverage = coverage_of(prepared, lock)
        with self.lock:  # seconds of the coverage threads
            self.stage_seconds["prepare.coverage"] += time.perf_counter() - start

    def _trial_pool(self, device) -> Optional[ThreadPoolExecutor]:
        """The threads that evaluate GPU ``device``'s trials (None for the host's, shared)."""
        if device is None:
            return None
        with self.lock:
            key = str(device)
            if key not in self.device_trial_pools:
                self.device_trial_pools[key] = ThreadPoolExecutor(max_workers=TRIAL_THREADS,
                                                                  thread_name_prefix=f"verify-trial-{key}")
            return self.device_trial_pools[key]

    def _host_trial(self, problem: Problem, group_id: str, trial: int):
        """The Future of one trial drawn on the host, drawn once per group (the stress rows of
        a large GEMM take seconds of numpy)."""
        with self.lock:
            return self._host_trial_locked(problem, group_id, trial)

    def _host_trial_locked(self, problem: Problem, group_id: str, trial: int):
        key = (group_id, problem.digest(), trial)
        if key not in self.host_trials:
            self.host_trials[key] = self.draw_pool.submit(make_trial_inputs, problem, group_id, trial,
                                                          self.trial_salt)
            self.host_trial_bytes[key] = drawn_bytes(problem)
        return self.host_trials[key]

    def prepared(self, group_id: str, problem: Problem, ordinal: int = 0) -> _ProblemTrials:
        with self.lock:
            future = self._prepare_future(group_id, problem, ordinal)
        return future.result()

    def on_gpu(self, group_id: str, prepared: _ProblemTrials, worker) -> _OnGpu:
        """``prepared`` where ``worker``'s members are judged: its references and bounds on
        the worker's judging GPU (judge.on_device; a copy from the GPU that prepared the
        group, or an upload of a host-made one), and where inputs reach the worker as device
        tensors, its inputs there too. Made once per group and GPU; a copy onto or off a GPU
        holds that GPU's quiet lock (quiet_gpus)."""
        problem = prepared.problem
        target = (judge_device(problem, self.reference, worker.ordinal)
                  or _worker_gpu_if_made_on_device(prepared, worker.ordinal))
        key = (group_id, problem.digest(), str(target))
        with self.lock:
            future = self.on_gpus.get(key)
            mine = future is None
            if mine:
                future = self.on_gpus[key] = Future()
        if not mine:
            return future.result()
        try:
            made = self._copy_to(prepared, target, worker)
        except BaseException as exc:
            future.set_exception(exc)
            raise
        future.set_result(made)
        return made

    def _copy_to(self, prepared: _ProblemTrials, target, worker) -> _OnGpu:
        source = getattr(prepared, "device", None)
        # data moves only between two places (the GPU's own group made there stays in place)
        moving = target is not None and str(source) != str(target)
        with self.quiet_gpus([source, target] if moving else []):
            judged = on_device(prepared, target)
            inputs = None
            if getattr(worker, "device_outputs_ok", False) and self.device_outputs and judged is not prepared:
                device = device_of(*judged.references[0].values())
                inputs = [device_inputs(t.storage, device) for t in prepared.trials]
        return _OnGpu(judged, inputs)

    def forget_prepared(self, group_id: str) -> None:
        """Drop a written group's prepared problems and their copies (their arrays are large)."""
        with self.lock:
            for found in (self.preparing, self.on_gpus, self.host_trials, self.host_trial_bytes):
                for key in [k for k in found if k[0] == group_id]:
                    del found[key]

    def verify_chunk(self, worker, group_id: str, rows: list) -> ChunkResult:
        """Contiguous rows of one group checked (and timed) on ``worker``; the agreement
        between members, derived members and writes wait for the group's other chunks
        (``finish_on_gpu``, ``finish_on_host``)."""
        gpu = dict(worker.info)
        mismatch = problem_mismatch(group_id, rows)
        if mismatch:
            return ChunkResult(*refuse_group(rows, mismatch, gpu), refused=True)
        out_rows, results = [], {}
        race_counts: dict = {}  # build_key -> racecheck hazard errors (None: not checked)
        # digest -> (prepared problem, the same with its arrays where members are judged)
        problems: dict = {}
        consensus_by_digest: dict = {}
        gpu_inputs: dict = {}  # digest -> per trial, the inputs as tensors on the judging GPU
        hashing: list = []     # rows whose output_hash is still a Future
        for row in rows:
            if self.stopping.is_set():
                raise RunStopped
            if row.status in PASS_THROUGH:
                out_rows.append(row)
                continue
            reason = runnable_reason(row.arch, self.cc)
            if reason:
                # Kept unverified (status unchanged) so another GPU can verify it later.
                row = unverified(row)
                row.status_message = f"not verified on {gpu.get('name')}: {reason}"
                out_rows.append(row)
                results[row.build_key] = "not_runnable"
                continue
            row_start = time.perf_counter()
            digest = row.problem.digest()
            if digest not in problems:
                with self.stopwatch("wait_prepare"):
                    prepared = self.prepared(group_id, row.problem, worker.ordinal)
                row_start = time.perf_counter()
                with self.stopwatch("copy"):
                    here = self.on_gpu(group_id, prepared, worker)
                judged, gpu_inputs[digest] = here.judged, here.inputs
                problems[digest] = (prepared, judged)
                consensus_by_digest[digest] = Consensus(judged.specs)
            prepared, judged = problems[digest]
            if prepared.refusal:
                status = prepared.refusal_status or "trivial_reference"
                verdict = Verdict(status, prepared.refusal, trials=0)
                out_rows.append(apply_verdict(row, verdict, prepared, gpu, coverage=False))
                results[row.build_key] = status
                continue
            assembled = self.pool.result(row) if self.pool is not None else None
            cubin = assembled.cubin if assembled else None
            run_start = time.perf_counter()
            with self.stopwatch("run"):
                if getattr(worker, "device_outputs_ok", False) and self.device_outputs and judged is not prepared:
                    # inputs and outputs stay on the GPU the members are judged on (device_outputs.py)
                    payload = [(t.trial, f"{digest}:{t.trial}", t.seed, gpu_inputs[digest][i])
                               for i, t in enumerate(prepared.trials)]
                    check = worker.check(row.to_json(), group_id, payload, cubin, self.kernel_timeout,
                                         device_outputs=True, **self._keep(prepared, digest))
                else:
                    payload = [(t.trial, f"{digest}:{t.trial}", t.seed, storage)
                               for t, storage in zip(prepared.trials, prepared.host_storage())]
                    check = worker.check(row.to_json(), group_id, payload, cubin, self.kernel_timeout,
                                         **self._keep(prepared, digest))
            with self.lock:
                for phase, seconds in (check.seconds or {}).items():
                    self.stage_seconds[f"run.{phase}"] += seconds
                # what the worker did not spend on the row: moving the job and its answer
                self.stage_seconds["run.pipe"] += max(0.0, time.perf_counter() - run_start
                                                      - sum((check.seconds or {}).values()))
            with self.stopwatch("judge"):
                verdict = classify(check, judged.specs, judged.references, host_references(prepared, judged),
                                   self.hash_pool)
            load_path = check.load_path or ("driver_jit" if not cubin else "cubin")
            if load_path == "cubin" and assembled:
                load_path = assembled.path
            new_row = apply_verdict(row, verdict, prepared, gpu, load_path,
                                    assembled.message if assembled else "", coverage=False)
            if check.fences or check.notes:  # how buffers were fenced, perturbations skipped
                new_row.provenance["verify"].update(fences=check.fences, runtime_notes=list(check.notes)[:8])
            if self.sanitizer and verdict.status not in ("jit_failed", "timeout"):
                findings = self._sanitize(row, prepared)
                new_row.sanitizer = json.dumps(findings, sort_keys=True)
                apply_sanitizer_status(new_row, sanitizer_status(findings))
                race_counts[row.build_key] = race_errors(findings)
            elif new_row.status == "passed":
                tails = tail_buffers(row)
                if tails:
                    self._memcheck_tails(row, new_row, prepared, tails)
            if new_row.status == "passed":
                if row.build_key not in race_counts:
                    self._assemble_racecheck(row)
                consensus_by_digest[digest].add(row.build_key, verdict.outputs, verdict.max_err_ratio)
                if self.timing:
                    with self.stopwatch("time"):
                        self._time(worker, new_row, prepared, digest)
            # the GPU thread's seconds for this row: what a later run schedules by (schedule.py)
            new_row.provenance["verify"]["gpu_seconds"] = round(time.perf_counter() - row_start, 4)
            out_rows.append(new_row)
            results[row.build_key] = new_row.status
            if isinstance(new_row.output_hash, Future):  # hashed on the host while the next member runs
                hashing.append(new_row)
                while len(hashing) > HASHES_IN_FLIGHT:
                    self._resolve_hash(hashing.pop(0))
        for pending in hashing:
            self._resolve_hash(pending)
        return ChunkResult(out_rows, results, race_counts, problems, consensus_by_digest)

    def finish_on_host(self, out_rows: list, merged: ChunkResult) -> None:
        """The group's last steps, on the host: its coverage counts (waiting for the measure
        where it still runs), survivors explained, unearned times dropped."""
        if merged.refused:
            return
        with self.stopwatch("wait_coverage"):
            fill_coverage(out_rows, {d: p for d, (p, _) in merged.problems.items()})
        explain_survivors(out_rows)
        drop_unearned_times(out_rows)

    def finish_on_gpu(self, worker, group_id: str, merged: ChunkResult) -> tuple:
        """The group's (rows, statuses) once every chunk is verified (``merged``, in row
        order), on ``worker`` and the GPUs: members outside the consensus, witnesses, derived
        members' probes, racecheck and delays (``finish_on_host`` then does the host's part)."""
        out_rows, results, race_counts, problems = merged.rows, merged.results, merged.race_counts, merged.problems
        if merged.refused:
            return out_rows, results
        consensus_by_digest = merged.consensus
        # the consensus lives on the first chunk's GPU, a prepared problem on the GPU that made
        # it: where either is another GPU than this thread's, that GPU may be timing
        touched = list(merged.devices) + [getattr(p, "device", None) for p, _ in problems.values()]
        foreign = any(_gpu_ordinal(d) not in (None, int(worker.ordinal)) for d in touched)
        with self.stopwatch("judge"), self.quiet_gpus(touched if foreign else []):
            self._apply_consensus(out_rows, results, consensus_by_digest)
            add_consensus_witnesses(out_rows, consensus_by_digest, {d: p for d, (p, _) in problems.items()})
        with self.stopwatch("racecheck"):
            self._racecheck_members(worker, out_rows, problems, race_counts)
        with self.stopwatch("derived"):
            self._judge_derived(worker, group_id, out_rows, results, problems, race_counts)
        apply_race_statuses(out_rows, results, racing_members(race_counts))
        with self.stopwatch("delays"):
            # judged where this worker judges: the merged group's copy is the first chunk's, and
            # its GPU may be timing (this worker verified the last chunk: its copy is kept)
            here = {d: (p, self.on_gpu(group_id, p, worker).judged) for d, (p, _) in problems.items()}
            self._delay_races(worker, group_id, out_rows, results, here)
        return out_rows, results

    def _keep(self, prepared: "_ProblemTrials", digest: str) -> dict:
        """The check's ``keep`` argument: the input keys of the trials timing will use."""
        if not self.timing:
            return {}
        return {"keep": [f"{digest}:{t.trial}" for t in timing_trials(prepared.trials)]}

    def _resolve_hash(self, row: KernelRecord) -> None:
        with self.stopwatch("judge.hash"):
            row.output_hash = row.output_hash.result()

    def _judge_derived(self, worker, group_id: str, out_rows: list, results: dict, problems: dict,
                       race_counts: dict) -> None:
        """Passing mutants get the coverage probe (a site that never ran: ``unexercised``);
        then passing members whose change lies near a barrier, fence or shared-memory
        access, and their bases, get racecheck (race_focus) unless --sanitize already ran it."""
        by_id = {row.kernel_id: row for row in out_rows if row.kernel_id}
        for row in out_rows:
            if row.status != "passed" or not (row.variant or {}).get("mutation"):
                continue
            prepared = problems[row.problem.digest()][0]
            payload = [(t.trial, f"{row.problem.digest()}:{t.trial}", t.seed, s)
                       for t, s in zip(prepared.trials, prepared.host_storage())]
            apply_coverage(row, measure_site(worker, row, by_id.get(row.variant.get("base")), group_id, payload,
                                             self.kernel_timeout))
            results[row.build_key] = row.status
        for row in out_rows:
            base = by_id.get(row.base_kernel_id or (row.variant or {}).get("base") or "")
            reason = racecheck_reason(row, base)
            if not reason:
                continue
            row.provenance.setdefault("verify", {})["racecheck"] = racecheck_note(reason, self.race_sanitizer,
                                                                                  self.race_missing)
            if not self.race_sanitizer:
                continue
            prepared = problems[row.problem.digest()][0]
            for member in (row, base):
                if member.build_key not in race_counts:
                    findings = self._sanitize(member, prepared, ("racecheck",), self.race_sanitizer)
                    member.sanitizer = json.dumps(findings, sort_keys=True)
                    race_counts[member.build_key] = race_errors(findings)
            if not race_counts.get(row.build_key):
                self._race_synchronous_copies(row, base, prepared, race_counts)
            self._barrier_never_ordered(row, base, race_counts, results)

    def _racecheck_members(self, worker, out_rows: list, problems: dict, race_counts: dict) -> None:
        """racecheck, once, of every passing member not race-checked yet, on its problem's
        first trial, in the racecheck process of the worker's GPU thread (kept for the run),
        with that GPU kept quiet (nothing is timed beside it). A hazard the group's other members
        lack makes a member ``race_detected`` (apply_race_statuses)."""
        todo = [row for row in out_rows if row.status in ("passed", "unexercised") and row.ptx
                and row.build_key not in race_counts]
        keys = {row.build_key for row in todo} if self.racecheck_every_member else set()
        if self.pool is not None:  # copies assembled for members that no longer pass
            for row in out_rows:
                if row.build_key not in keys:
                    self.pool.discard(row.build_key + RACECHECK_KEY)
        if not self.racecheck_every_member or not todo:
            return
        if not self.race_sanitizer:
            for row in todo:
                row.provenance.setdefault("verify", {})["racecheck"] = f"not run ({self.race_missing}): every member"
            return
        members, cut, retried = [], set(), {}
        for row in todo:
            # the same copy _assemble_racecheck made (the sample depends on the salt and the member only)
            record, shrunk = racecheck_record(row, self.trial_salt)
            cubin = self.pool.result_of(row.build_key + RACECHECK_KEY).cubin if self.pool is not None else None
            members.append((row.build_key, record.to_json(), problems[row.problem.digest()][0].first_host_storage(),
                            cubin))
            if shrunk:
                cut.add(row.build_key)
        try:
            servers = self._racecheck_server(worker)
            before = servers.seconds
            with self.quiet_gpu(worker.ordinal):
                found = servers.check(members, timeout_per_member=RACECHECK_MEMBER_SECONDS)
                retried = self._racecheck_alone(servers, members, found, {row.build_key: row for row in todo})
            with self.lock:  # the children's phases, summed over the processes
                for phase, seconds in servers.seconds.items():
                    self.stage_seconds[f"racecheck.{phase}"] += seconds - before.get(phase, 0.0)
        except Exception as exc:  # a sanitizer that fails to run is recorded and changes nothing
            found = {row.build_key: {"racecheck": {"errors": None, "failed": f"{type(exc).__name__}: {exc}"[:300]}}
                     for row in todo}
        for row in todo:
            findings = found.get(row.build_key) or {}
            merged = json.loads(row.sanitizer or "{}")
            merged.update(findings)
            row.sanitizer = json.dumps(merged, sort_keys=True)
            race_counts[row.build_key] = race_errors(findings)
            ran = "ran" if race_counts[row.build_key] is not None else "failed"
            if ran == "failed":  # the status stands (a slow correct kernel fails the same way); the row says so
                why = str((findings.get("racecheck") or {}).get("failed") or findings.get("failed") or "no result")
                add_finding(row, "racecheck", None, f"racecheck could not check it: {why[:160]}")
            blocks = f", {RACECHECK_FEW_BLOCKS} salted blocks of each large launch" if row.build_key in cut else ""
            if row.build_key in retried:
                blocks = (f", again alone after {retried[row.build_key]}, on {RACECHECK_FEW_BLOCKS} salted blocks "
                          f"of each larger launch")
            row.provenance.setdefault("verify", {})["racecheck"] = f"{ran}: every member, on its first trial{blocks}"

    def _racecheck_alone(self, servers: RacecheckServers, members: list, found: dict, rows: dict) -> dict:
        """Members whose racecheck failed beside the others (a slow member may outlive its
        time while the GPU is shared) checked again one at a time, JIT-loaded, with their
        blocks sampled down to RACECHECK_FEW_BLOCKS and twice the time: a kernel that makes
        itself slow under the tool does not skip racecheck. Their findings replace the
        failed ones; returns {build_key: why the member was retried}. ``rows``: build_key ->
        the member's own row (its copy is made again from it)."""
        retried, again = {}, []
        for key, record_json, inputs, _ in members:
            report = (found.get(key) or {}).get("racecheck") or {}
            if report.get("errors") is not None or report.get("skipped") or key not in rows:
                continue
            try:
                record, _ = racecheck_record(rows[key], self.trial_salt, whole_up_to=RACECHECK_FEW_BLOCKS)
                record_json = record.to_json()
            except Exception:
                pass  # the sampled copy failed: the member's first copy runs alone
            retried[key] = str(report.get("failed") or "a failed run")[:80]
            again.append((key, record_json, inputs))
        if again:
            found.update(servers.check_alone(again, timeout_per_member=2 * RACECHECK_MEMBER_SECONDS))
        return retried

    def _assemble_racecheck(self, row: KernelRecord) -> None:
        """A passing member's racecheck copy (its blocks sampled) made now and its PTX handed
        to the assembly pool, so the racecheck process loads a cubin when the group is done
        instead of JIT-compiling the member under the tool (``_racecheck_members`` makes the
        same copy again: about 10 ms for a CUTLASS GEMM, against keeping every copy's PTX)."""
        if not (self.racecheck_every_member and self.race_sanitizer and self.pool is not None and row.ptx):
            return
        if not uses_shared_memory(row):
            return
        try:
            record, _ = racecheck_record(row, self.trial_salt)
        except Exception:  # the racecheck step makes it again and says what went wrong
            return
        self.pool.submit_ptx(row.build_key + RACECHECK_KEY, record.ptx, row.arch)

    def _racecheck_server(self, worker) -> RacecheckServers:
        """The racecheck processes of ``worker``'s GPU thread, started on first use and kept
        for the run (each one's start-up, about a second and a half, is paid once)."""
        with self.lock:
            server = self.racecheck_servers.get(id(worker))
            if server is None:
                server = self.racecheck_servers[id(worker)] = RacecheckServers(
                    self.race_sanitizer, worker.ordinal, RACECHECK_PROCESSES)
        return server

    def close_racecheck(self) -> None:
        for server in self.racecheck_servers.values():
            server.shutdown()
        self.racecheck_servers.clear()

    def _delay_races(self, worker, group_id: str, out_rows: list, results: dict, problems: dict) -> None:
        """Members still passing whose change touches synchronisation (race_focus.delay_reason)
        run with half of their warps delayed beside their base (race_delays); outputs that
        change where the base's do not make them ``race_detected``."""
        by_id = {row.kernel_id: row for row in out_rows if row.kernel_id}
        base_runs: dict = {}  # base build_key -> its runs (a base serves all its members)
        for row in out_rows:
            base = by_id.get(row.base_kernel_id or (row.variant or {}).get("base") or "")
            reason = delay_reason(row, base)
            if not reason:
                continue
            if not hasattr(worker, "run_outputs"):
                row.provenance.setdefault("verify", {})["delays"] = {
                    "reason": reason, "outcome": "unknown",
                    "note": f"{type(worker).__name__} cannot run delayed copies"}
                continue
            prepared = problems[row.problem.digest()][0]
            first = prepared.trials[0]
            payload = [(first.trial, f"{row.problem.digest()}:{first.trial}", first.seed,
                        prepared.first_host_storage())]
            if base.build_key not in base_runs:
                base_runs[base.build_key] = delay_member_runs(worker, base, group_id, payload, self.kernel_timeout)
            mutant_runs = delay_member_runs(worker, row, group_id, payload, self.kernel_timeout)
            cause = DROPPED_BARRIER if (row.variant or {}).get("mutation") == "drop_barrier" else CHANGED_ORDER
            judged = problems[row.problem.digest()][1]  # where this worker judges (finish_on_gpu)
            verdict = judge_delays(mutant_runs, base_runs[base.build_key], base, judged, cause=cause)
            row.provenance.setdefault("verify", {})["delays"] = {"reason": reason, **verdict.record}
            if verdict.status and add_finding(row, "race_delays", verdict.status, verdict.message):
                results[row.build_key] = row.status

    @staticmethod
    def _barrier_never_ordered(row: KernelRecord, base: KernelRecord, race_counts: dict, results: dict) -> None:
        """A passing dropped barrier that racecheck shows ordered nothing here: ``unexercised``."""
        forms = (row.provenance.get("verify") or {}).get("racecheck_sync_copies")
        counts = (forms["mutant"], forms["base"]) if forms else (race_counts.get(row.build_key),
                                                                  race_counts.get(base.build_key))
        if forms is None and synchronous_copy_pair(row, base) is not None:
            return  # copies the plain racecheck cannot see, and no synchronous form ran
        note = barrier_never_ordered(row, base, *counts)
        if note and add_finding(row, "barrier", "unexercised", note):
            results[row.build_key] = row.status

    def _race_synchronous_copies(self, row: KernelRecord, base: KernelRecord, prepared: "_ProblemTrials",
                                 race_counts: dict) -> None:
        """racecheck of a dropped barrier's mutant and base with their cp.async copies made
        synchronous (race_focus.synchronous_copy_pair); a hazard only the mutant's form has
        makes the mutant racing. The forms' counts stay out of ``race_counts``: they are not
        members of the group."""
        pair = synchronous_copy_pair(row, base)
        if pair is None:
            return
        counts = [race_errors(self._sanitize(member, prepared, ("racecheck",), self.race_sanitizer))
                  for member in pair]
        verdict = synchronous_copy_verdict(*counts)
        row.provenance.setdefault("verify", {})["racecheck_sync_copies"] = {
            "mutant": counts[0], "base": counts[1], **({"verdict": verdict} if verdict else {})}
        if verdict:
            race_counts[row.build_key] = counts[0]
            findings = json.loads(row.sanitizer or "{}")
            findings["racecheck_sync_copies"] = {"errors": counts[0], "base_errors": counts[1], "note": verdict}
            row.sanitizer = json.dumps(findings, sort_keys=True)

    def _memcheck_tails(self, row: KernelRecord, new_row: KernelRecord, prepared: "_ProblemTrials",
                        tails: list) -> None:
        """memcheck, by default, for a passing member with written buffers ``tails`` whose end
        a store could straddle (``tail_buffers``): the fenced placement leaves up to 15 bytes
        past such an end before the guard page, where a store of the bytes already there
        changes nothing the checks see."""
        # without --sanitize (the only caller's case) race_sanitizer is automatic_sanitizer()'s,
        # found once per run rather than on PATH per passing row
        path, missing = self.race_sanitizer, self.race_missing
        verify_note = new_row.provenance.setdefault("verify", {})
        names = ", ".join(tails)
        if path is None:
            verify_note["memcheck_tails"] = f"not run ({missing}): buffers {names} end inside a 16-byte word"
            return
        with self.stopwatch("memcheck_tails"):
            findings = self._sanitize(row, prepared, tools=("memcheck",), sanitizer=path)
        new_row.sanitizer = json.dumps(findings, sort_keys=True)
        verify_note["memcheck_tails"] = f"ran: buffers {names} end inside a 16-byte word"
        apply_sanitizer_status(new_row, sanitizer_status(findings), check="memcheck_tails")

    def _sanitize(self, row: KernelRecord, prepared: _ProblemTrials, tools=TOOLS,
                  sanitizer: Optional[str] = None) -> dict:
        try:
            return run_sanitizer(row.to_json(), prepared.first_host_storage(), tools=tools,
                                 sanitizer=sanitizer or self.sanitizer)
        except Exception as exc:  # a sanitizer that fails to run is recorded and changes nothing
            return {"failed": f"{type(exc).__name__}: {exc}"[:300]}

    @staticmethod
    def _apply_consensus(out_rows: list, results: dict, consensus_by_digest: dict) -> None:
        """Members outside their problem's consensus cluster become ``disagrees``."""
        verdicts = {}
        for consensus in consensus_by_digest.values():
            verdicts.update(consensus.verdicts())
        for row in out_rows:
            if row.build_key not in verdicts or row.status != "passed":
                continue
            agrees, ratio, message = verdicts[row.build_key]
            row.max_disagreement = ratio
            if not agrees and add_finding(row, "consensus", "disagrees", message):
                results[row.build_key] = row.status

    def _time(self, worker, row: KernelRecord, prepared: "_ProblemTrials", digest: str) -> None:
        timeout = 2 * self.kernel_timeout + 3 * self.time_budget + 10.0
        timed = timing_trials(prepared.trials)
        sets = [(f"{digest}:{t.trial}", t.seed) for t in timed]
        with self.quiet_gpu(worker.ordinal):
            reply = worker.time(row.build_key, self.time_budget, timeout, MAX_TIMING_SAMPLES, sets=sets)
        if reply.get("error"):
            # The row passed its checks; a timing failure is noted, not a status change,
            # unless the kernel crashed, hung or computed something else while being timed.
            status = None
            if reply["error"] in ("timeout", "died", "crashed", "timing_mismatch"):
                status = {"timeout": "timeout", "timing_mismatch": "timing_mismatch"}.get(reply["error"], "crashed")
            add_finding(row, "timing", status, f"timing: {reply.get('message', reply['error'])}")
            return
        with self.lock:
            for phase, seconds in (reply.get("seconds") or {}).items():
                self.stage_seconds[f"time.{phase}"] += seconds
        record_timing(row, reply)
        row.provenance.setdefault("verify", {})["timing"] = {
            "input_trials": [t.trial for t in timed], "checked_samples": reply.get("checked_samples"),
            "module_state": "load-time image restored before every timed sample"}
        apply_roofline(row, worker.info)

    def summarise(self, group_id: str, rows: list, results: dict) -> GroupSummary:
        statuses = Counter(results.values())
        statuses.update(r.status for r in rows if r.status in PASS_THROUGH)
        ran = [r for r in rows if results.get(r.build_key) not in (None, "not_runnable")]
        stats = group_stats(ran)
        return GroupSummary(
            group_id=group_id, members=len(rows), statuses=dict(statuses),
            all_equivalent=bool(ran) and all(r.status in ("passed", "unexercised") for r in ran),
            fastest=stats.fastest, fastest_us=stats.fastest_us, slowest_us=stats.slowest_us,
            ran=len(ran), not_runnable=statuses.get("not_runnable", 0),
            distinct_outputs=len({r.output_hash for r in ran if r.status == "passed" and r.output_hash}))

    def serve(self, worker) -> None:
        """A thread's loop: take the next chunk from the shared queue, verify it on
        ``worker``; the thread that verifies a group's last chunk merges the group's
        chunks, finishes it on its worker and writes it."""
        name = threading.current_thread().name
        try:
            while True:
                chunk = self.take(worker.ordinal)
                if chunk is None:
                    return
                start = time.perf_counter()
                group_id, rows = self.groups[chunk.group]
                with self.gpu_turns.get(gpu_identity(worker), contextlib.nullcontext()):
                    result = self.verify_chunk(worker, group_id, rows[chunk.start:chunk.stop])
                    with self.lock:
                        state = self.open_groups.setdefault(chunk.group, _OpenGroup(chunk.count))
                        state.done[chunk.index] = result
                        complete = len(state.done) == state.count
                        if complete:
                            del self.open_groups[chunk.group]
                    if complete:
                        parts = [state.done[i] for i in range(state.count)]
                        # the merge compares kept outputs across the chunks' GPUs: none of them may be timing
                        with self.stopwatch("judge.merge"), \
                                self.quiet_gpus(chunk_devices(parts) if len(parts) > 1 else []):
                            merged = merge_chunks(parts)
                        out_rows, results = self.finish_on_gpu(worker, group_id, merged)
                        self.forget_prepared(group_id)  # its copies' GPU memory; the rows keep what they need
                if complete:
                    # a group finished before any stop is written even if its write waits past one
                    self.write_when_measured(chunk.group, out_rows, results, merged,
                                             finished_before_stop=not self.stopping.is_set())
                with self.lock:
                    self.gpu_busy[name] += time.perf_counter() - start
        except RunStopped:
            return
        except BaseException as exc:  # surface in the main thread; other threads stop taking chunks
            with self.lock:
                self.error = self.error or exc
            self.queue.close()

    def write_when_measured(self, index: int, out_rows: list, results: dict, merged: ChunkResult,
                            finished_before_stop: bool = True) -> None:
        """``finish_on_host`` and ``write_group`` now if the group's coverage measures are done,
        else on the writing thread once they are, so the GPU thread takes its next chunk
        instead of waiting for host work (``drain`` waits for those writes). Groups are written
        in the order they finish: behind a write still waiting, a group waits too."""
        pending = [p._coverage_pending for p, _ in merged.problems.values()
                   if p._coverage_pending is not None and not p._coverage_pending.done()]
        with self.lock:
            queued = any(not write.done() for write in self.writes)
        if not pending and not queued:
            self.finish_on_host(out_rows, merged)
            self.write_group(index, out_rows, results, finished_before_stop)
            return

        def write() -> None:
            try:
                for measure in pending:
                    measure.result()
                self.finish_on_host(out_rows, merged)
                self.write_group(index, out_rows, results, finished_before_stop)
            except BaseException as exc:  # surfaces in the main thread (drain); the GPU threads stop
                with self.lock:
                    self.error = self.error or exc
                self.queue.close()
                raise
        with self.lock:
            self.writes.append(self.write_pool.submit(write))

    def drain(self) -> None:
        """Waits for the writes left to the writing thread (a failed one is ``self.error``)."""
        for future in list(self.writes):
            with contextlib.suppress(BaseException):
                future.result()

    def write_group(self, index: int, out_rows: list, results: dict, finished_before_stop: bool = True) -> None:
        """A finished group's rows in one part. A group that finished after the run began to
        stop is not written (a member whose worker the stopping signal killed would read as a
        crash): it is verified again when the run is resumed."""
        group_id = self.groups[index][0]
        summary = self.summarise(group_id, out_rows, results)
        with self.lock:  # the main thread sets ``stopping`` under the same lock
            if self.stopping.is_set() and not finished_before_stop:
                return
            self.writer.write(out_rows)
            self.summaries[index] = summary
            for status in results.values():
                if status == "not_runnable":
                    self.not_runnable += 1
                else:
                    self.counts[status] += 1
            if self.bar is not None:
                self.bar.update(1)


def record_timing(row: KernelRecord, reply: dict) -> None:
    """A passing row's timing columns from a GPU worker's timing reply (``Timing.reply``)."""
    stats = reply["stats"]
    row.time_us_median, row.time_us_iqr = stats["median_us"], stats["iqr_us"]
    row.time_us_min, row.time_samples = stats["min_us"], stats["samples"]
    row.time_method = reply.get("method", "events")
    events = reply.get("event_stats") or (stats if row.time_method == "events" else None)
    if events:
        row.time_us_events_median, row.time_us_events_iqr = events["median_us"], events["iqr_us"]
    if reply.get("fallback_reason"):
        row.provenance.setdefault("verify", {})["timing_fallback"] = reply["fallback_reason"][:500]
    row.sm_clock_mhz = reply.get("sm_clock_mhz") or None
    if reply.get("sm_clock_source"):
        row.provenance.setdefault("verify", {})["sm_clock_source"] = reply["sm_clock_source"]
    if not stats["converged"]:
        add_finding(row, "timing", None, f"timing did not reach {TARGET_RSE:.2%} RSE "
                                         f"(median RSE {stats['rse'] * 100:.2f}%)")


def tail_buffers(row: KernelRecord) -> list:
    """Names of the row's written buffers whose end a store of the row's launched code could
    straddle: byte size not a multiple of the widest global store (naturally aligned, so a
    narrower store cannot cross the end; see ``_Run._memcheck_tails``)."""
    widest = widest_global_store(launched_code(row.ptx, [launch.entry for launch in row.launches]))
    if widest <= 1:
        return []
    return [b.name for b in row.buffers() if b.role != "in" and b.nbytes % widest]


def timing_trials(trials: list) -> list:
    """The trials whose inputs timing alternates: up to TIMING_SETS of the ordinary kinds,
    in TIMING_KINDS order (normal and uniform by default); the first trial where a plan has
    none of them."""
    chosen = []
    for kind in TIMING_KINDS:
        chosen += [t for t in trials if t.kind == kind and t not in chosen]
    chosen = chosen[:TIMING_SETS]
    return chosen or list(trials[:1])


def apply_roofline(row: KernelRecord, device: dict) -> None:
    """``roofline_us`` and ``sol_ratio`` of a timed row; a time below the floor by more
    than its noise makes it ``faster_than_roofline`` (and it keeps no time)."""
    verdict = roofline_judge(problem_work(row.problem, get_op(row.problem.op).reduction_length),
                             row.time_us_median, row.time_us_iqr, device)
    if verdict is None:
        return
    row.roofline_us, row.sol_ratio = verdict.floor_us, verdict.sol_ratio
    row.provenance.setdefault("verify", {})["roofline"] = verdict.note
    if verdict.too_fast:
        message = (f"median time {row.time_us_median:.3g} us is below the roofline floor {verdict.floor_us:.3g} us "
                   f"({verdict.bound}-bound: {verdict.note['dram_bytes']} bytes, {verdict.note['flops']} flops) by "
                   f"more than its noise: the kernel skipped work")
        add_finding(row, "roofline", "faster_than_roofline", message)


def drop_unearned_times(rows: list) -> None:
    """A time is a claim like a label: rows that failed any check keep none."""
    for row in rows:
        if row.status not in TIMED_STATUSES and row.time_us_median is not None:
            row.provenance.setdefault("verify", {})["dropped_time_us"] = row.time_us_median
            for name in TIMING_COLUMNS:
                setattr(row, name, None)


def plan_group_chunks(groups: list, gpus: int, trials: Optional[int], timing: bool, time_budget: float,
                      measured: Optional[dict] = None) -> list:
    """The shared queue's chunks (schedule.plan_chunks) for ``groups`` [(group_id, rows)]
    verified by ``gpus`` workers: rows cost their ``measured`` seconds where known, else an
    estimate; a group whose rows carry different problems stays whole (it is refused whole)."""
    def trials_of(row) -> int:
        return trials or (trial_count(row.problem) if row.problem is not None else 1)
    costs = [row_costs(rows, measured, trials_of, timing, time_budget) for _, rows in groups]
    whole = [index for index, (group_id, rows) in enumerate(groups) if problem_mismatch(group_id, rows)]
    return plan_chunks(costs, gpus, whole)


def select_groups(records: list, pattern: Optional[str]) -> list:
    """[(group_id, rows)] in first-seen order, filtered by an fnmatch pattern on group_id."""
    groups: dict = {}
    for record in records:
        if pattern and not fnmatch.fnmatchcase(record.group_id, pattern):
            continue
        groups.setdefault(record.group_id, []).append(record)
    return list(groups.items())


def verify_dataset(in_dir, out_dir, options: Optional[VerifyOptions] = None, *, progress: bool = True,
                   start_workers=None, assembly_pool=None, **settings) -> VerifySummary:
    """Verify (and time) every group of the dataset in ``in_dir``; write rows to ``out_dir``
    (each in the split it has in ``in_dir``). What the run does is ``options``
    (``VerifyOptions``, verify/options.py; ``settings``: its fields as keywords, changing
    them); ``progress``, ``start_workers`` and ``assembly_pool`` are the means it runs with.
    The settings:

    ``groups``: fnmatch pattern on group_id. ``trials``: trials per problem (None: one per
    trial kind of the problem, so every kind runs). ``workers``: GPU worker processes, spread over
    the visible GPUs (None or 0: one per GPU). ``kernel_timeout``: seconds one row may take (JIT, all trials) before
    its worker is killed (status timeout). ``assemble_jobs``: processes assembling PTX ahead
    of the GPU (None: all cores, 0: none, the driver JIT does it). ``time_budget``: seconds
    of timing per passing row. ``sanitize``: also run each member under compute-sanitizer
    (memcheck, racecheck; the ``sanitizer`` column). ``reference``: where float64 work runs: auto (torch on the
    GPU for large array-API references and for the per-element checks of large outputs,
    when torch with CUDA is importable; else numpy), numpy, or torch (judge.py). ``start_workers``: a
    function of ``workers`` returning objects with ``GpuWorker``'s interface (default:
    local worker processes; the Ray executor gives actors on a cluster's GPUs).
    ``assembly_pool``: a function of (compute capability, ``assemble_jobs``) returning an
    object with ``AssemblyPool``'s submit/result/close (default: ``AssemblyPool``; the Ray
    executor's assembles on the cluster's CPUs). ``device_outputs``: where members are
    judged on the GPU and the worker has torch with CUDA, their outputs stay on the GPU
    (device_outputs.py; False: every output is downloaded and piped, the host path; both
    give the same rows). ``inputs``: auto (groups of the ops device_prepare.py knows, judged
    on the GPU, get their inputs from the counter-based device generator and their
    references and bounds there; the rest, and every trial it cannot make, from the host),
    or host (numpy's generator and host references for every group, as before).
    ``split``: with several GPU workers, spread a group's members over them in chunks
    pulled from one queue (schedule.py; False: each group whole on one worker).
    ``racecheck``: run every passing member that uses shared memory under compute-sanitizer
    racecheck once, on its problem's first trial (all of a group's members in one sanitizer
    process), where compute-sanitizer is installed; hazards its group's other members lack
    make it ``race_detected``.
    ``trial_salt``: mixed into every trial's seed and recorded in each verified row's
    ``provenance.verify.trial_salt`` ('' : the seeds depend on the group and problem only;
    ``ptxds verify`` draws a fresh salt per run, so no kernel knows its inputs in advance).
    ``costs_from``: a verified dataset whose rows' measured seconds (``gpu_seconds``) the
    schedule uses for the same build keys (the input's own are used where it has them);
    other rows' costs are estimated. Raises NoDriverError when no GPU can be used.
    """
    from .worker import start_local_workers
    options = (options or VerifyOptions()).replace(**settings)
    groups, trials, timing, workers = options.groups, options.trials, options.timing, options.workers
    assemble_jobs, time_budget, split, costs_from = options.assemble_jobs, options.time_budget, options.split, \
        options.costs_from
    in_path, out_path = Path(in_dir).resolve(), Path(out_dir).resolve()
    if in_path == out_path:
        raise ValueError("out_dir must differ from in_dir: the input dataset is never changed in place")
    sanitizer = None
    if options.sanitize:
        from .probes.sanitize import find_sanitizer
        sanitizer = find_sanitizer()
    records = Dataset(in_path).records()
    selected = select_groups(records, groups)
    done = Dataset(out_path).done_keys()
    todo = [(g, rows) for g, rows in selected if not all(r.build_key in done for r in rows)]
    summary = VerifySummary(skipped_groups=len(selected) - len(todo))
    if not todo:
        return summary

    gpu_workers = (start_workers or start_local_workers)(workers)
    pool = None
    bar = None
    run = None
    try:
        info = gpu_workers[0].info
        summary.gpu_name = info.get("name", "")
        cc = tuple(info["cc"])
        pool = (assembly_pool or AssemblyPool)(cc, assemble_jobs)
        if progress:
            try:
                from tqdm import tqdm
                bar = tqdm(total=len(todo), unit="group", desc="verify")
            except ImportError:
                bar = None
        chunks = plan_group_chunks(todo, len(gpu_workers) if split else 1, trials, timing, time_budget,
                                   measured=measured_seconds(records) | (measured_seconds(Dataset.open(costs_from).records())
                                                                         if costs_from else {}))
        run = _Run(todo, out_path, options, pool, cc, bar, sanitizer, chunks=chunks,
                   ordinals=[getattr(w, "ordinal", i) for i, w in enumerate(gpu_workers)],
                   gpu_ids=[gpu_identity(w) for w in gpu_workers],
                   carried_splits=Dataset(in_path).split_of_keys())
        threads = [threading.Thread(target=run.serve, args=(w,), name=f"verify-gpu{i}", daemon=True)
                   for i, w in enumerate(gpu_workers)]
        started = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        run.drain()
        if run.error is not None:
            raise run.error
        summary.wall_seconds = time.perf_counter() - started
        summary.chunks = len(chunks)
        summary.split_groups = len({c.group for c in chunks if c.count > 1})
        summary.gpu_busy_seconds = [run.gpu_busy.get(t.name, 0.0) for t in threads]
        summary.groups = [run.summaries[i] for i in sorted(run.summaries)]
        summary.counts = dict(run.counts)
        summary.not_runnable = run.not_runnable
        summary.stage_seconds = dict(run.stage_seconds)
        summary.worker_peak_rss_mib = [rss for rss in (getattr(w, "peak_rss_mib", lambda: None)() for w in gpu_workers)
                                       if rss is not None]
        import resource
        summary.parent_peak_rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        return summary
    except KeyboardInterrupt:
        # a stopped run (Ctrl-C, SIGTERM, a time limit) still says where its time went; the
        # groups written so far stay, and a later run resumes after them
        if run is not None:
            with run.lock:
                run.stopping.set()
            run.drain()  # the groups finished before the stop whose writes still wait on a measure
        if run is not None and run.stage_seconds:
            print(f"verify stopped after {len(run.summaries)} of {len(todo)} groups; seconds per stage so far: "
                  + ", ".join(f"{k} {v:.1f}" for k, v in sorted(run.stage_seconds.items(), key=lambda kv: -kv[1])),
                  file=sys.stderr, flush=True)
        raise
    finally:
        if bar is not None:
            bar.close()
        if pool is not None:
            pool.close()
        if run is not None:
            run.close()
            run.close_racecheck()
        for w in gpu_workers:
            w.close()
