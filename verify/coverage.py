"""Whether a passing mutant's changed instruction ever ran: the coverage probe.

A mutant that passed every trial either changed code its problem never executes (then it
is equivalent *for this problem*: status ``unexercised``) or ran the change and got away
(it stays ``passed``; pairs call it ``survived``). To tell them apart the runner builds an
instrumented copy of the mutant (``ptx_tools.rewrite.probe``: a ``uint32`` counter
incremented at the mutated site, reached through a parameter appended to its entry), adds
the counter as a zeroed scratch buffer and an extra pointer argument of that entry's
launches, and runs it once per trial on the trial inputs in the GPU worker. A probe that
cannot be built or run leaves coverage unknown, never counted either way.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional

from dataset_spec.model import Arg, Buffer, Distribution, KernelRecord
from ptx_tools.rewrite.probe import MutatedSite, ProbeError, SiteProbe, instrument_site, mutated_site

COUNTER_BUFFER = "ptxds_site_count"


@dataclass
class SiteCoverage:
    """The probe's answer: ``exercised`` None when it could not be measured (``reason``)."""
    exercised: Optional[bool]
    counts: list = dataclasses.field(default_factory=list)  # executions of the site per trial
    site: str = ""
    line: Optional[int] = None  # 1-based line of the site in the mutant's PTX
    reason: str = ""

    def to_dict(self) -> dict:
        return {"exercised": self.exercised, "counts": self.counts, "site": self.site, "line": self.line,
                **({"reason": self.reason} if self.reason else {})}


@dataclass
class ProbedRow:
    """A mutant's coverage probe: ``record`` runs it; ``counter`` names its counter buffer."""
    record: KernelRecord
    site: MutatedSite
    probe: SiteProbe
    counter: str


def probe_record(record: KernelRecord, base_ptx: str) -> ProbedRow:
    """``record`` with the probe's PTX, the counter as an extra zeroed scratch buffer, and
    its pointer appended to the args of the launches of the entry that holds the site.
    Raises ProbeError when the site cannot be probed."""
    site = mutated_site(base_ptx, record.ptx)
    probe = instrument_site(record.ptx, site)
    names = {b.name for b in record.buffers()}
    counter = COUNTER_BUFFER
    while counter in names:
        counter += "_"
    if not any(launch.entry == probe.entry for launch in record.launches):
        raise ProbeError(f"the site is in entry {probe.entry}, which no launch of the row runs")
    launches = [dataclasses.replace(launch, args=list(launch.args) + [Arg.buf(counter)])
                if launch.entry == probe.entry else launch for launch in record.launches]
    scratch = list(record.scratch) + [Buffer(counter, "uint32", (1,), "scratch", Distribution("zeros"))]
    # its own build_key: a timing job for the mutant must never find the probe loaded
    row = dataclasses.replace(record, ptx=probe.ptx, launches=launches, scratch=scratch,
                              build_key=f"{record.build_key}:probe")
    return ProbedRow(row, site, probe, counter)


def count_site(worker, job: dict) -> dict:
    """Worker side: load the instrumented row (driver JIT), run it once per trial on the
    inputs the worker holds, and read the counter after each run."""
    from .args import ArgError
    from .driver import DriverError
    from .inputs import guard_fill
    if job.get("group") != worker.inputs_group:
        worker.inputs, worker.inputs_group = {}, job.get("group")
    worker.inputs.update(job.get("inputs") or {})
    record = KernelRecord.from_json(job["record"])
    try:
        worker._load_row(record, None)
    except ArgError as exc:
        return {"error": "arg_error", "message": str(exc), "fatal": False}
    except DriverError as exc:
        return {"error": "load_failed", "message": str(exc), "fatal": exc.sticky}
    counts = []
    for _, key, seed in job["trials"]:
        worker._run(worker.inputs[key], seed, 0, guard_fill(seed, 1))
        counts.append(int(worker._download(("scratch",))[job["counter"]].reshape(-1)[0]))
    return {"counts": counts}


def measure_site(worker, record: KernelRecord, base: Optional[KernelRecord], group_id: str, trials: list,
                 timeout: float) -> SiteCoverage:
    """How often the mutated site of ``record`` ran on each of ``trials`` (the runner's
    payload: (trial, key, seed, storage))."""
    if base is None:
        return SiteCoverage(None, reason=f"base member {record.variant.get('base')} is not in the group")
    if not hasattr(worker, "site_count"):
        return SiteCoverage(None, reason=f"{type(worker).__name__} cannot run a coverage probe")
    try:
        probed = probe_record(record, base.ptx)
    except (ProbeError, ValueError) as exc:
        return SiteCoverage(None, reason=f"probe not built: {exc}")
    text, line = probed.probe.site, probed.site.line + 1
    reply = worker.site_count(probed.record.to_json(), group_id, trials, probed.counter, timeout)
    if reply.get("error"):
        return SiteCoverage(None, site=text, line=line,
                            reason=f"probe did not run: {reply['error']}: {reply.get('message', '')}"[:500])
    counts = reply["counts"]
    return SiteCoverage(any(counts), counts, text, line)


def apply_coverage(row: KernelRecord, coverage: SiteCoverage) -> None:
    """Records the probe under ``provenance.verify.coverage``; a passing mutant whose site
    never ran becomes ``unexercised``."""
    row.provenance.setdefault("verify", {})["coverage"] = coverage.to_dict()
    if coverage.exercised is False and row.status == "passed":
        note = (f"the mutated site (line {coverage.line}: {coverage.site[:120]}) never ran in "
                f"{len(coverage.counts)} trial(s): equivalent for this problem")
        row.status = "unexercised"
        row.status_message = f"{note}; {row.status_message}" if row.status_message else note
