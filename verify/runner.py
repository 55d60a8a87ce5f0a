"""verify_dataset: run every group of a dataset on the GPU, prove equivalence, time members.

Per group: inputs drawn once per trial (recorded seeds), the float64 reference computed
once per trial, every member run in an isolated GPU worker and judged against the
reference and the group's first passing member, passing members timed, then the group's
rows written to the output folder in one atomic part. A resumed run skips groups whose
rows are already in the output folder. The input folder is only read.
"""
from __future__ import annotations

import dataclasses
import fnmatch
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from dataset_spec.model import KernelRecord, Problem
from dataset_spec.problems import get_op
from dataset_spec.shards import ShardWriter, done_keys, read_records

from .assembly_pool import AssemblyPool, runnable_reason
from .compare import trivial_reason
from .inputs import make_trial_inputs
from .reference import reference_outputs
from .timing import TARGET_RSE
from .outcome import OutputSpec, Verdict, classify

PASS_THROUGH = ("build_failed", "no_problem")
PREFETCH_GROUPS = 4
MAX_TIMING_SAMPLES = 2000


@dataclass
class GroupSummary:
    group_id: str
    members: int
    statuses: dict
    all_equivalent: bool      # every runnable member passed (and at least one ran)
    fastest: Optional[str] = None      # name of the fastest passing member
    fastest_us: Optional[float] = None
    slowest_us: Optional[float] = None

    @property
    def spread(self) -> Optional[float]:
        """slowest / fastest median time among timed members."""
        if self.fastest_us and self.slowest_us:
            return self.slowest_us / self.fastest_us
        return None


@dataclass
class VerifySummary:
    groups: list = field(default_factory=list)       # GroupSummary per verified group
    counts: dict = field(default_factory=dict)       # status -> rows (this run)
    skipped_groups: int = 0                          # already in out_dir (resumed)
    not_runnable: int = 0                            # rows this GPU cannot run
    gpu_name: str = ""

    def format(self) -> str:
        lines = [f"verified {len(self.groups)} group(s) on {self.gpu_name or 'no GPU'}; "
                 f"{self.skipped_groups} already done; {self.not_runnable} row(s) not runnable here"]
        lines.append("status counts: " + ", ".join(f"{k}={v}" for k, v in sorted(self.counts.items())))
        for g in self.groups:
            spread = f", spread {g.spread:.2f}x" if g.spread else ""
            fastest = f", fastest {g.fastest} ({g.fastest_us:.2f} us)" if g.fastest else ""
            lines.append(f"  {g.group_id}: {g.members} members, "
                         f"{'all equivalent' if g.all_equivalent else 'NOT all equivalent'}{fastest}{spread}")
        return "\n".join(lines)


@dataclass
class _ProblemTrials:
    """Everything a problem's members are judged against, computed once per group."""
    problem: Problem
    trials: list          # inputs.TrialInputs
    references: list      # per trial: name -> float64
    specs: list           # OutputSpec per out/inout buffer
    refusal: str = ""     # why the group cannot be verified (trivial or failing reference)
    refusal_status: str = ""


def prepare_problem(problem: Problem, group_id: str, n_trials: int,
                    reference: str = "auto") -> _ProblemTrials:
    """Draw inputs, compute references and tolerances for every trial; refuse trivial ones.
    ``reference``: where the float64 reference runs (see reference.py)."""
    op = get_op(problem.op)
    trials = [make_trial_inputs(problem, group_id, t) for t in range(n_trials)]
    specs = []
    for buf in problem.buffers:
        if buf.role in ("out", "inout"):
            atol, rtol = op.tolerance(problem, buf.dtype)
            specs.append(OutputSpec(buf.name, buf.dtype, atol, rtol))
    prepared = _ProblemTrials(problem, trials, [], specs)
    for trial in trials:
        try:
            ref = reference_outputs(op, dict(trial.values), problem, reference)
        except Exception as exc:
            prepared.refusal = f"reference failed: {type(exc).__name__}: {exc}"
            return prepared
        shaped = {}
        for spec in specs:
            if spec.name not in ref:
                prepared.refusal = f"reference returned no value for output {spec.name}"
                return prepared
            shaped[spec.name] = ref[spec.name].reshape(problem.buffer(spec.name).shape).astype("float64")
            reason = trivial_reason(shaped[spec.name], spec.atol, spec.rtol)
            if reason:
                prepared.refusal = f"trial {trial.trial} ({trial.kind}): output {spec.name}: {reason}"
                prepared.refusal_status = "trivial_reference"
                return prepared
        prepared.references.append(shaped)
    return prepared


def _clear_verifier_columns(row: KernelRecord) -> KernelRecord:
    row = dataclasses.replace(row, provenance=dict(row.provenance or {}))
    for name in ("max_abs_err", "max_rel_err", "atol", "rtol", "trials", "deterministic", "time_us_median",
                 "time_us_iqr", "time_us_min", "time_samples", "gpu_name", "sm_clock_mhz", "driver_version"):
        setattr(row, name, None)
    return row


def apply_verdict(row: KernelRecord, verdict: Verdict, prepared: _ProblemTrials, gpu: dict,
                  load_path: str = "", load_note: str = "") -> KernelRecord:
    """The row with the verifier's columns filled in from ``verdict``."""
    row = _clear_verifier_columns(row)
    row.status, row.status_message = verdict.status, verdict.message
    row.max_abs_err, row.max_rel_err = verdict.max_abs_err, verdict.max_rel_err
    row.atol, row.rtol = verdict.atol, verdict.rtol
    row.trials, row.deterministic = verdict.trials or None, verdict.deterministic
    row.gpu_name, row.driver_version = gpu.get("name"), gpu.get("driver_version")
    row.provenance["verify"] = {
        "seeds": [t.seed for t in prepared.trials], "trial_kinds": [t.kind for t in prepared.trials],
        "load": load_path, **({"load_note": load_note[:1000]} if load_note else {}),
    }
    return row


class _Run:
    """One verify_dataset call: shared state of the group threads."""

    def __init__(self, groups: list, out_dir: Path, trials: int, timing: bool, kernel_timeout: float,
                 time_budget: float, pool: Optional[AssemblyPool], gpu_cc: tuple, progress_bar,
                 reference: str = "auto"):
        self.groups = groups
        self.trials = trials
        self.reference = reference
        self.timing = timing
        self.kernel_timeout = kernel_timeout
        self.time_budget = time_budget
        self.pool = pool
        self.cc = gpu_cc
        self.writer = ShardWriter(out_dir)
        self.lock = threading.Lock()
        self.next_index = 0
        self.submitted = 0
        self.summaries: dict = {}
        self.counts: Counter = Counter()
        self.not_runnable = 0
        self.bar = progress_bar
        self.error: Optional[BaseException] = None

    def take(self) -> Optional[int]:
        """Next group index; also keeps assembly PREFETCH_GROUPS groups ahead of the GPU."""
        with self.lock:
            if self.next_index >= len(self.groups) or self.error is not None:
                return None
            index = self.next_index
            self.next_index += 1
            while self.pool is not None and self.submitted < min(len(self.groups), index + 1 + PREFETCH_GROUPS):
                for row in self.groups[self.submitted][1]:
                    if row.status not in PASS_THROUGH:
                        self.pool.submit(row)
                self.submitted += 1
            return index

    def verify_group(self, worker, group_id: str, rows: list) -> tuple:
        gpu = dict(worker.info)
        out_rows, results = [], {}
        prepared_by_digest: dict = {}
        baseline_by_digest: dict = {}
        for row in rows:
            if row.status in PASS_THROUGH:
                out_rows.append(row)
                continue
            reason = runnable_reason(row.arch, self.cc)
            if reason:
                # Kept unverified (status unchanged) so another GPU can verify it later.
                row = _clear_verifier_columns(row)
                row.status_message = f"not verified on {gpu.get('name')}: {reason}"
                out_rows.append(row)
                results[row.build_key] = "not_runnable"
                continue
            digest = row.problem.digest()
            if digest not in prepared_by_digest:
                prepared_by_digest[digest] = prepare_problem(row.problem, group_id, self.trials, self.reference)
            prepared = prepared_by_digest[digest]
            if prepared.refusal:
                status = prepared.refusal_status or "trivial_reference"
                verdict = Verdict(status, prepared.refusal, trials=0)
                out_rows.append(apply_verdict(row, verdict, prepared, gpu))
                results[row.build_key] = status
                continue
            assembled = self.pool.result(row) if self.pool is not None else None
            cubin = assembled.cubin if assembled else None
            payload = [(t.trial, f"{digest}:{t.trial}", t.seed, t.storage) for t in prepared.trials]
            check = worker.check(row.to_json(), group_id, payload, cubin, self.kernel_timeout)
            verdict = classify(check, prepared.specs, prepared.references, baseline_by_digest.get(digest))
            load_path = check.load_path or ("driver_jit" if not cubin else "cubin")
            if load_path == "cubin" and assembled:
                load_path = assembled.path
            new_row = apply_verdict(row, verdict, prepared, gpu, load_path,
                                    assembled.message if assembled else "")
            if verdict.status == "passed":
                baseline_by_digest.setdefault(digest, verdict.outputs)
                if self.timing:
                    self._time(worker, new_row)
            out_rows.append(new_row)
            results[row.build_key] = new_row.status
        return out_rows, results

    def _time(self, worker, row: KernelRecord) -> None:
        timeout = self.kernel_timeout + 3 * self.time_budget + 10.0
        reply = worker.time(row.build_key, self.time_budget, timeout, MAX_TIMING_SAMPLES)
        if reply.get("error"):
            # The row passed its checks; a timing failure is noted, not a status change,
            # unless the kernel crashed or hung while being timed.
            if reply["error"] in ("timeout", "died", "crashed"):
                row.status = "timeout" if reply["error"] == "timeout" else "crashed"
            row.status_message = f"timing: {reply.get('message', reply['error'])}"
            return
        stats = reply["stats"]
        row.time_us_median, row.time_us_iqr = stats["median_us"], stats["iqr_us"]
        row.time_us_min, row.time_samples = stats["min_us"], stats["samples"]
        row.sm_clock_mhz = reply.get("sm_clock_mhz") or None
        if not stats["converged"]:
            note = f"timing did not reach {TARGET_RSE:.2%} RSE (median RSE {stats['rse'] * 100:.2f}%)"
            row.status_message = f"{row.status_message}; {note}" if row.status_message else note

    def summarise(self, group_id: str, rows: list, results: dict) -> GroupSummary:
        statuses = Counter(results.values())
        ran = [r for r in rows if results.get(r.build_key) not in (None, "not_runnable")]
        timed = [r for r in ran if r.status == "passed" and r.time_us_median is not None]
        fastest = min(timed, key=lambda r: r.time_us_median) if timed else None
        slowest = max(timed, key=lambda r: r.time_us_median) if timed else None
        return GroupSummary(
            group_id=group_id, members=len(rows), statuses=dict(statuses),
            all_equivalent=bool(ran) and all(r.status == "passed" for r in ran),
            fastest=fastest.name if fastest else None,
            fastest_us=fastest.time_us_median if fastest else None,
            slowest_us=slowest.time_us_median if slowest else None)

    def serve(self, worker) -> None:
        """A thread's loop: take groups, verify them on ``worker``, write them."""
        try:
            while True:
                index = self.take()
                if index is None:
                    return
                group_id, rows = self.groups[index]
                out_rows, results = self.verify_group(worker, group_id, rows)
                summary = self.summarise(group_id, out_rows, results)
                with self.lock:
                    self.writer.write(out_rows)
                    self.summaries[index] = summary
                    for status in results.values():
                        if status == "not_runnable":
                            self.not_runnable += 1
                        else:
                            self.counts[status] += 1
                    if self.bar is not None:
                        self.bar.update(1)
        except BaseException as exc:  # surface in the main thread; other threads stop taking groups
            with self.lock:
                self.error = self.error or exc


def select_groups(records: list, pattern: Optional[str]) -> list:
    """[(group_id, rows)] in first-seen order, filtered by an fnmatch pattern on group_id."""
    groups: dict = {}
    for record in records:
        if pattern and not fnmatch.fnmatchcase(record.group_id, pattern):
            continue
        groups.setdefault(record.group_id, []).append(record)
    return list(groups.items())


def verify_dataset(in_dir, out_dir, *, groups: Optional[str] = None, trials: int = 3, timing: bool = True,
                   workers: Optional[int] = None, kernel_timeout: float = 20.0, assemble_jobs: Optional[int] = None,
                   progress: bool = True, time_budget: float = 1.0, reference: str = "auto") -> VerifySummary:
    """Verify (and time) every group of the dataset in ``in_dir``; write rows to ``out_dir``.

    ``groups``: fnmatch pattern on group_id. ``workers``: GPU worker processes, spread over
    the visible GPUs (None or 0: one per GPU). ``kernel_timeout``: seconds one row may take (JIT, all trials) before
    its worker is killed (status timeout). ``assemble_jobs``: processes assembling PTX ahead
    of the GPU (None: all cores, 0: none, the driver JIT does it). ``time_budget``: seconds
    of timing per passing row. ``reference``: auto (torch on the GPU for large array-API
    ops when torch is importable, else numpy), numpy, or torch. Raises NoDriverError when
    no GPU can be used.
    """
    from .worker import GpuWorker
    in_path, out_path = Path(in_dir).resolve(), Path(out_dir).resolve()
    if in_path == out_path:
        raise ValueError("out_dir must differ from in_dir: the input dataset is never changed in place")
    if trials < 1:
        raise ValueError(f"trials must be >= 1, got {trials}")
    selected = select_groups(read_records(in_path), groups)
    done = done_keys(out_path) if out_path.exists() else set()
    todo = [(g, rows) for g, rows in selected if not all(r.build_key in done for r in rows)]
    summary = VerifySummary(skipped_groups=len(selected) - len(todo))
    if not todo:
        return summary

    gpu_workers = [GpuWorker(0)]
    pool = None
    bar = None
    try:
        count = int(gpu_workers[0].info.get("device_count", 1)) or 1
        for i in range(1, workers or count):
            gpu_workers.append(GpuWorker(i % count))
        info = gpu_workers[0].info
        summary.gpu_name = info.get("name", "")
        cc = tuple(info["cc"])
        pool = AssemblyPool(cc, assemble_jobs)
        if progress:
            try:
                from tqdm import tqdm
                bar = tqdm(total=len(todo), unit="group", desc="verify")
            except ImportError:
                bar = None
        run = _Run(todo, out_path, trials, timing, kernel_timeout, time_budget, pool, cc, bar, reference)
        threads = [threading.Thread(target=run.serve, args=(w,), name=f"verify-gpu{w.ordinal}", daemon=True)
                   for w in gpu_workers]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if run.error is not None:
            raise run.error
        summary.groups = [run.summaries[i] for i in sorted(run.summaries)]
        summary.counts = dict(run.counts)
        summary.not_runnable = run.not_runnable
        return summary
    finally:
        if bar is not None:
            bar.close()
        if pool is not None:
            pool.close()
        for w in gpu_workers:
            w.close()
