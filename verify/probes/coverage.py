"""Whether a passing mutant's changed instruction ever ran: the coverage probe.

A mutant that passed every trial either changed code its problem never executes (then it
is equivalent *for this problem*: status ``unexercised``) or ran the change and got away
(it stays ``passed``; pairs call it ``survived``). To tell them apart the runner builds an
instrumented copy of the mutant (``ptx_tools.instrument.probe``: a ``uint64`` counter
incremented at the mutated site, reached through a parameter appended to its entry), adds
the counter as a zeroed scratch buffer and an extra pointer argument of that entry's
launches, and runs it once per trial on the trial inputs in the GPU worker. A probe that
cannot be built or run leaves coverage unknown, never counted either way.

A dropped barrier's base also gets the ordering probe (``ptx_tools.instrument.ordering``): no
two threads of a CTA touching one address on its two sides with a write among them, on
every trial, makes the mutant ``unexercised`` too (the barrier ordered nothing here).

For an exercised site the base gets the same probe at the same place (``base_counts``),
and ``explain_survivor`` records, for a mutant still ``passed`` once racecheck is done, why
it may be equivalent under ``provenance.verify.survivor``: a proof from the PTX
(``ptx_tools.analysis.equivalence``: a dead result, a sign that a square removes), or an
observation from the trials (the site ran exactly as often as in the base), each labelled
as what it is.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional

from dataset_spec.model import Arg, Buffer, Distribution, KernelRecord
from ptx_tools.instrument.divergence import instrument_divergence
from ptx_tools.analysis.equivalence import OBSERVATION, SurvivorReason, static_reason
from ptx_tools.instrument.ordering import COUNTER_WORDS, instrument_ordering
from ptx_tools.analysis.sites import MutatedSite, ProbeError, mutated_site
from ptx_tools.instrument.probe import SiteProbe, instrument_site

from .race_delays import describe_for_survivor
from ..judge.findings import add_finding

COUNTER_BUFFER = "ptxds_site_count"


@dataclass
class SiteCoverage:
    """The probe's answer: ``exercised`` None when it could not be measured (``reason``)."""
    exercised: Optional[bool]
    counts: list = dataclasses.field(default_factory=list)  # executions of the site per trial
    site: str = ""
    line: Optional[int] = None  # 1-based line of the site in the mutant's PTX
    reason: str = ""
    base_counts: Optional[list] = None  # the base's executions of the same site (None: not measured)
    base_reason: str = ""
    diverged: Optional[list] = None  # executions where the change altered what the thread did (None: not measured)
    divergence_reason: str = ""
    # a dropped barrier's ordering probe on the base, per trial: [conflicts, lookups,
    # overflows, records] (None: not measured, ``ordering_reason`` says why)
    ordering: Optional[list] = None
    ordering_reason: str = ""

    @property
    def ordered_nothing(self) -> bool:
        """The dropped barrier ran, and on every trial no two threads of a CTA accessed one
        address on its two sides with a write among them, and the probe's tables held."""
        return bool(self.exercised) and self.ordering is not None and len(self.ordering) == len(self.counts) \
            and all(t[0] == 0 and t[2] == 0 for t in self.ordering) and any(t[1] for t in self.ordering)

    @property
    def never_took_effect(self) -> bool:
        """The site ran, yet on every trial the mutant did what its base did."""
        return bool(self.exercised) and self.diverged is not None and len(self.diverged) == len(self.counts) \
            and not any(self.diverged)

    def to_dict(self) -> dict:
        return {"exercised": self.exercised, "counts": self.counts, "site": self.site, "line": self.line,
                **({"reason": self.reason} if self.reason else {}),
                **({"base_counts": self.base_counts} if self.base_counts is not None else {}),
                **({"base_reason": self.base_reason} if self.base_reason else {}),
                **({"diverged": self.diverged} if self.diverged is not None else {}),
                **({"divergence_reason": self.divergence_reason} if self.divergence_reason else {}),
                **({"ordering": self.ordering} if self.ordering is not None else {}),
                **({"ordering_reason": self.ordering_reason} if self.ordering_reason else {})}


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
    return _probed(record, mutated_site(base_ptx, record.ptx))


def probe_base(base: KernelRecord, mutant_ptx: str) -> ProbedRow:
    """The base with a counter at the place its mutant changed (for a dropped line, the
    line itself), to compare how often the site runs in each."""
    site = mutated_site(base.ptx, mutant_ptx)
    if site.base_line is None:
        raise ProbeError("the mutated site has no place in the base")
    before = site.before.split("\n")[0] if site.before else ""
    at_base = MutatedSite(site.base_line, site.kind, before, before, site.guard, site.base_line)
    return _probed(base, at_base)


def _probed(record: KernelRecord, site: MutatedSite) -> ProbedRow:
    return _with_counter(record, site, instrument_site(record.ptx, site))


def divergence_record(record: KernelRecord, base_ptx: str) -> ProbedRow:
    """``record`` with the divergence probe's PTX (``ptx_tools.instrument.divergence``) and its
    counter. Raises ProbeError when the mutation cannot be shadowed."""
    return _with_counter(record, mutated_site(base_ptx, record.ptx), instrument_divergence(base_ptx, record.ptx),
                         ":divergence")


def ordering_record(base: KernelRecord, mutant_ptx: str) -> ProbedRow:
    """The base with the ordering probe (``ptx_tools.instrument.ordering``) of the barrier its
    ``drop_barrier`` mutant removed; its counter buffer holds the probe's counters and tables.
    Raises ProbeError when the barrier's accesses cannot be followed."""
    site = mutated_site(base.ptx, mutant_ptx)
    if site.kind != "delete" or site.base_line is None:
        raise ProbeError("the mutant does not delete one line of its base")
    ctas = max((launch.grid[0] * launch.grid[1] * launch.grid[2] for launch in base.launches), default=1)
    probe = instrument_ordering(base.ptx, site.base_line, ctas)
    at_base = SiteProbe(probe.ptx, probe.entry, probe.param, site.base_line, probe.barrier)
    return _with_counter(base, site, at_base, ":ordering", probe.words)


def _with_counter(record: KernelRecord, site: MutatedSite, probe: SiteProbe, key: str = ":probe",
                  words: int = 1) -> ProbedRow:
    names = {b.name for b in record.buffers()}
    counter = COUNTER_BUFFER
    while counter in names:
        counter += "_"
    if not any(launch.entry == probe.entry for launch in record.launches):
        raise ProbeError(f"the site is in entry {probe.entry}, which no launch of the row runs")
    launches = [dataclasses.replace(launch, args=list(launch.args) + [Arg.buf(counter)])
                if launch.entry == probe.entry else launch for launch in record.launches]
    # 64-bit counts: a 32-bit sum of many threads' counts can wrap to exactly 0
    scratch = list(record.scratch) + [Buffer(counter, "uint64", (words,), "scratch", Distribution("zeros"))]
    # its own build_key: a timing job for the mutant must never find the probe loaded
    row = dataclasses.replace(record, ptx=probe.ptx, launches=launches, scratch=scratch,
                              build_key=f"{record.build_key}{key}")
    return ProbedRow(row, site, probe, counter)


def count_site(worker, job: dict) -> dict:
    """Worker side: load the instrumented row (driver JIT), run it once per trial on the
    inputs the worker holds, and read the counter after each run."""
    from ..member.args import ArgError
    from ..device.driver import DriverError
    from ..trials.inputs import guard_fill
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
    counts, words = [], job.get("words")
    for _, key, seed in job["trials"]:
        worker._run(worker.inputs[key], seed, 0, guard_fill(seed, 1))
        counter = worker._download(("scratch",))[job["counter"]].reshape(-1)
        counts.append([int(v) for v in counter[:words]] if words else int(counter[0]))
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
    coverage = SiteCoverage(any(counts), counts, text, line)
    if coverage.exercised:
        try:
            at_base = probe_base(base, record.ptx)
        except (ProbeError, ValueError) as exc:
            coverage.base_reason = f"base probe not built: {exc}"
            return coverage
        reply = worker.site_count(at_base.record.to_json(), group_id, trials, at_base.counter, timeout)
        if reply.get("error"):
            coverage.base_reason = f"base probe did not run: {reply['error']}: {reply.get('message', '')}"[:500]
        else:
            coverage.base_counts = reply["counts"]
        _measure_divergence(worker, record, base, group_id, trials, timeout, coverage)
        if (record.variant or {}).get("mutation") == "drop_barrier":
            _measure_ordering(worker, record, base, group_id, trials, timeout, coverage)
    return coverage


def _measure_ordering(worker, record: KernelRecord, base: KernelRecord, group_id: str, trials: list,
                      timeout: float, coverage: SiteCoverage) -> None:
    """Runs the ordering probe of the barrier a ``drop_barrier`` mutant removed, on its
    base; a probe that cannot be built or run leaves ``ordering`` None (unknown)."""
    try:
        probed = ordering_record(base, record.ptx)
    except (ProbeError, ValueError) as exc:
        coverage.ordering_reason = f"ordering probe not built: {exc}"[:500]
        return
    reply = worker.site_count(probed.record.to_json(), group_id, trials, probed.counter, timeout,
                              words=COUNTER_WORDS)
    if reply.get("error"):
        coverage.ordering_reason = f"ordering probe did not run: {reply['error']}: {reply.get('message', '')}"[:500]
    else:
        coverage.ordering = reply["counts"]


def _measure_divergence(worker, record: KernelRecord, base: KernelRecord, group_id: str, trials: list,
                        timeout: float, coverage: SiteCoverage) -> None:
    """Runs the divergence probe of an exercised site; a probe that cannot be built or run
    leaves ``diverged`` None (unknown), never zero."""
    try:
        probed = divergence_record(record, base.ptx)
    except (ProbeError, ValueError) as exc:
        coverage.divergence_reason = f"divergence probe not built: {exc}"[:500]
        return
    reply = worker.site_count(probed.record.to_json(), group_id, trials, probed.counter, timeout)
    if reply.get("error"):
        coverage.divergence_reason = f"divergence probe did not run: {reply['error']}: {reply.get('message', '')}"[:500]
    else:
        coverage.diverged = reply["counts"]


def apply_coverage(row: KernelRecord, coverage: SiteCoverage) -> None:
    """Records the probe under ``provenance.verify.coverage``; a passing mutant whose site
    never ran, or whose change never altered anything its thread did (divergence probe: 0
    on every trial), becomes ``unexercised``."""
    row.provenance.setdefault("verify", {})["coverage"] = coverage.to_dict()
    if row.status != "passed":
        return
    if coverage.exercised is False:
        note = (f"the mutated site (line {coverage.line}: {coverage.site[:120]}) never ran in "
                f"{len(coverage.counts)} trial(s): equivalent for this problem")
    elif coverage.ordered_nothing:
        lookups = sum(t[1] for t in coverage.ordering)
        note = (f"the dropped barrier (line {coverage.line}: {coverage.site[:80]}) ran {coverage.counts} times, but "
                f"the ordering probe found no address that two threads of a CTA accessed on its two sides with a "
                f"write among them ({lookups} lookups, 0 conflicts over {len(coverage.ordering)} trial(s)): "
                "the barrier ordered nothing here, equivalent for this problem")
    elif coverage.never_took_effect:
        note = (f"the mutated site (line {coverage.line}: {coverage.site[:120]}) ran {coverage.counts} times, but "
                "no memory access, branch or guard it reaches ever saw a value other than the base's "
                f"(divergences {coverage.diverged}): the change never took effect, equivalent for this problem")
    else:
        return
    add_finding(row, "coverage", "unexercised", note)


def _empirical_reason(operator: str, coverage: dict, delays: Optional[dict] = None) -> SurvivorReason:
    """What the trials showed about a survivor's site, never more (with the delay
    injection's outcome, ``provenance.verify.delays``, where it ran)."""
    reason = _trial_reason(operator, coverage)
    tried = describe_for_survivor(delays)
    if operator == "drop_barrier" and delays is not None and reason.reason == "race_not_observed":
        return SurvivorReason(OBSERVATION, "race_not_observed",
                              reason.detail.replace("; a missing barrier", f"; {tried}; a missing barrier"))
    return dataclasses.replace(reason, detail=f"{reason.detail}; {tried}") if tried else reason


def _trial_reason(operator: str, coverage: dict) -> SurvivorReason:
    counts, base_counts = coverage.get("counts"), coverage.get("base_counts")
    if not counts or base_counts is None:
        why = coverage.get("base_reason") or coverage.get("reason") or "the base's count was not measured"
        return SurvivorReason(OBSERVATION, "passed_every_trial",
                              f"same output on every trial; no reason established ({why})")
    if operator == "drop_barrier":
        ordering = coverage.get("ordering")
        probed = (f"the ordering probe saw {sum(t[0] for t in ordering)} conflicting accesses across it"
                  if ordering else coverage.get("ordering_reason") or "the ordering probe did not run")
        return SurvivorReason(OBSERVATION, "race_not_observed",
                              f"race not observed: same result on every trial (site counts {counts}, base "
                              f"{base_counts}) and racecheck found no hazard its base lacks where it ran; "
                              f"{probed}; a missing barrier is still a race (not proven equivalent)")
    if counts != base_counts:
        return SurvivorReason(OBSERVATION, "masked_downstream",
                              f"the site ran {counts} times against the base's {base_counts} and the output "
                              "still matched on every trial: the change is masked (not proven)")
    diverged = coverage.get("diverged")
    if diverged and any(diverged):
        # the divergence probe saw the change reach memory or control flow: an unchanged
        # predicate outcome or value is then not what kept the output
        return SurvivorReason(OBSERVATION, "masked_downstream",
                              f"the change altered an address, stored value, branch or guard on {diverged} "
                              "executions per trial and the output still matched on every trial: masked "
                              "downstream (for example the same value stored by other threads, or slots "
                              "relabelled alike for loads and stores); not proven equivalent")
    if operator == "off_by_one":
        return SurvivorReason(OBSERVATION, "same_trip_count",
                              f"the site ran exactly as often as in the base on every trial ({counts}): the "
                              "changed constant does not change the trip count or the values at this size "
                              "(observed, not proven for other sizes)")
    if operator in ("flip_comparison", "flip_store_guard"):
        return SurvivorReason(OBSERVATION, "same_predicate_outcome",
                              f"same result on every trial, counts equal ({counts}): the predicate's outcome "
                              "agrees for every executing thread on these inputs (observed, not proven)")
    return SurvivorReason(OBSERVATION, "same_counts_same_output",
                          f"same result on every trial, counts equal to the base's ({counts})")


def survivor_reason(row: KernelRecord, base: Optional[KernelRecord]) -> SurvivorReason:
    """Why a mutant that is still ``passed`` may be equivalent: a proof from the PTX where
    one exists, else an observation from the coverage counts."""
    operator = (row.variant or {}).get("mutation", "")
    checks = row.provenance.get("verify") or {}
    delays = checks.get("delays")
    if base is not None and base.ptx:
        found = static_reason(base.ptx, row.ptx, operator)
        if found is not None:
            tried = describe_for_survivor(delays) if found.kind == OBSERVATION else ""
            return dataclasses.replace(found, detail=f"{found.detail}; {tried}") if tried else found
    return _empirical_reason(operator, checks.get("coverage") or {}, delays)


def explain_survivors(rows: list) -> None:
    """Records ``provenance.verify.survivor`` (kind, reason, detail) on every mutant of
    ``rows`` that is still ``passed``; run after racecheck has had its say."""
    by_id = {row.kernel_id: row for row in rows if row.kernel_id}
    for row in rows:
        if row.status != "passed" or not (row.variant or {}).get("mutation"):
            continue
        reason = survivor_reason(row, by_id.get((row.variant or {}).get("base", "")))
        row.provenance.setdefault("verify", {})["survivor"] = reason.to_dict()
