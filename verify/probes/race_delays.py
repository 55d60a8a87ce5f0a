"""Race amplification by delay injection: a passing member whose change touches
synchronisation is run with half of each block's warps made late, beside its base.

racecheck sees only shared memory, and the trials' schedules may never make one side of a
dropped barrier late, so a barrier that ordered global memory can pass both. Here the
member and its base each run three times on the first trial's inputs (the buffers, poison
and guard fill of a trial's first run): plainly, and in the two delayed copies of
``ptx_tools.instrument.delays`` (warps of parity 0, then of parity 1, sleep before every store
and after every remaining barrier). Judged in the parent (``delay_verdict``):

- the base's delayed outputs must equal its plain ones (bitwise; within the error bound
  where the base is nondeterministic), else the delays perturbed something besides the
  change: recorded (``base_changed``), the member's status left alone;
- the member's delayed outputs leaving the error bound, or differing bitwise from the
  base's delayed outputs where the base is deterministic and the member's plain outputs
  equal the base's bit for bit, make it ``race_detected``; a sticky fault in a delayed run
  of the member (none in the base's) makes it ``crashed``;
- a delayed copy that cannot be built, loaded or launched, or that runs past its time,
  leaves the answer unknown for that parity, never a kill.

Everything is recorded under ``provenance.verify.delays``.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from dataset_spec.model import KernelRecord
from ptx_tools.instrument.delays import DEFAULT_NANOSECONDS, PARITIES, DelayError, delayed_copy

PLAIN = "plain"
DROPPED_BARRIER = "the dropped barrier ordered them"
CHANGED_ORDER = "its change leaves accesses unordered that its base orders"
CRASH_ERRORS = ("crashed",)  # a sticky fault during the run: the kernel itself broke


def label(parity: int) -> str:
    return f"parity{parity}"


@dataclass
class DelayedMember:
    """The records one member runs (plain first, then each parity that could be built) and
    why a parity could not be."""
    runs: list = field(default_factory=list)        # (label, KernelRecord)
    refused: dict = field(default_factory=dict)     # label -> DelayError message
    placements: dict = field(default_factory=dict)  # label -> DelayedPtx.describe()


def delayed_members(record: KernelRecord, nanoseconds: int = DEFAULT_NANOSECONDS) -> DelayedMember:
    """``record`` plainly and in both delayed copies, each with its own build_key (a timing
    job for the member must never find a delayed copy loaded)."""
    member = DelayedMember(runs=[(PLAIN, dataclasses.replace(record, build_key=f"{record.build_key}:plain"))])
    for parity in PARITIES:
        try:
            delayed = delayed_copy(record.ptx, parity, nanoseconds)
        except DelayError as exc:
            member.refused[label(parity)] = str(exc)
            continue
        member.placements[label(parity)] = delayed.describe()
        member.runs.append((label(parity), dataclasses.replace(record, ptx=delayed.ptx,
                                                               build_key=f"{record.build_key}:delay{parity}")))
    return member


def run_outputs(worker, job: dict) -> dict:
    """Worker side: load each record of ``job["records"]`` (driver JIT) and run it once on
    the first trial's inputs with run 1's poison and guard fill; the outputs come back as
    host arrays. A sticky fault ends the job (the context is dead) with ``fatal``."""
    from ..member.args import ArgError
    from ..device.driver import DriverError
    from ..trials.inputs import guard_fill
    if job.get("group") != worker.inputs_group:
        worker.inputs, worker.inputs_group = {}, job.get("group")
    worker.inputs.update(job.get("inputs") or {})
    worker.device_outputs = False  # outputs come back to the parent as host arrays
    _, key, seed = job["trials"][0]
    runs: dict = {}
    if key not in worker.inputs:
        return {"runs": {name: {"error": "no_inputs", "message": f"the worker holds no inputs {key}"}
                         for name, _ in job["records"]}}
    for name, record_json in job["records"]:
        record = KernelRecord.from_json(record_json)
        stage = "load_failed"
        try:
            worker._load_row(record, None)
            stage = "launch_failed"
            runs[name] = {"outputs": worker._run(worker.inputs[key], seed, 0, guard_fill(seed, 1))}
        except ArgError as exc:
            runs[name] = {"error": "arg_error", "message": str(exc)[:300]}
        except DriverError as exc:
            # only a sticky fault is the kernel's own crash; a refused load or launch is not
            runs[name] = {"error": "crashed" if exc.sticky else stage, "message": str(exc)[:300]}
            if exc.sticky:
                return {"runs": runs, "fatal": True}
        except Exception as exc:  # a failure of ours, not of the kernel: never a crash
            runs[name] = {"error": "failed", "message": f"{type(exc).__name__}: {exc}"[:300]}
    return {"runs": runs}


def bits_equal(a: dict, b: dict) -> bool:
    """Whether two runs' outputs (name -> storage array) hold the same bits."""
    if set(a) != set(b):
        return False
    return all(np.asarray(a[name]).tobytes() == np.asarray(b[name]).tobytes() for name in a)


@dataclass
class DelayVerdict:
    """``status``: race_detected, crashed or None (unchanged); ``record`` goes to
    ``provenance.verify.delays``."""
    status: Optional[str]
    message: str
    record: dict


def delay_verdict(mutant: dict, base: dict, within_bound: Callable, base_deterministic: bool,
                  placements: Optional[dict] = None, refused: Optional[dict] = None,
                  nanoseconds: int = DEFAULT_NANOSECONDS, cause: str = DROPPED_BARRIER) -> DelayVerdict:
    """Judge a member's delayed runs against its base's. ``mutant``/``base``: label ->
    {"outputs": ...} or {"error", "message"} (labels ``plain``, ``parity0``, ``parity1``);
    ``within_bound(outputs)`` -> (ok, detail) against the trial's reference and bound;
    ``cause`` ends a race's message (what the change did to the accesses' order)."""
    refused = refused or {}
    record = {"nanoseconds": nanoseconds, "trial": 0, "variants": []}
    base_plain, mutant_plain = base.get(PLAIN) or {}, mutant.get(PLAIN) or {}
    if "outputs" not in base_plain:
        why = f"the base's plain run failed: {base_plain.get('error', 'not run')}: {base_plain.get('message', '')}"
        record.update(outcome="unknown", note=why.strip(": "))
        return DelayVerdict(None, "", record)
    bitwise = (base_deterministic and "outputs" in mutant_plain
               and bits_equal(mutant_plain["outputs"], base_plain["outputs"]))
    record["compared"] = "bitwise against the base's delayed outputs" if bitwise else "against the error bound"
    kills, base_changed, unknown = [], [], []
    for parity in PARITIES:
        name = label(parity)
        entry = {"parity": parity, **({"placements": placements[name]} if placements and name in placements else {})}
        record["variants"].append(entry)
        if name in refused:
            entry["result"] = f"not built: {refused[name]}"
            unknown.append(entry["result"])
            continue
        b, m = base.get(name) or {}, mutant.get(name) or {}
        if "outputs" not in b:
            entry["result"] = note = f"the base's delayed copy did not run: {b.get('error', 'not run')}"
            entry["message"] = b.get("message", "")
            unknown.append(note)
            continue
        if base_deterministic:
            steady, detail = bits_equal(b["outputs"], base_plain["outputs"]), "its bits changed"
        else:
            steady, detail = within_bound(b["outputs"])
        if not steady:
            entry["result"] = f"the base's outputs changed under the delays ({detail})"
            base_changed.append(parity)
            continue
        if "outputs" not in m:
            error = m.get("error", "not run")
            entry["message"] = m.get("message", "")
            if error in CRASH_ERRORS:
                entry["result"] = "crashed"
                kills.append(("crashed", f"crashed when warps of parity {parity} were delayed before their "
                              "stores and after barriers, where its base's delayed copy runs "
                              f"({entry['message'][:200]}): a crash of the member"))
            else:
                entry["result"] = f"the member's delayed copy did not run: {error}"
                unknown.append(entry["result"])
            continue
        ok, detail = within_bound(m["outputs"])
        if not ok:
            entry["result"] = f"outside the error bound: {detail}"
            kills.append(("race_detected", f"outputs left the error bound when warps of parity {parity} were delayed "
                          f"before their stores and after barriers ({detail}), while the base's stayed the same: "
                          f"{cause}"))
        elif bitwise and not bits_equal(m["outputs"], b["outputs"]):
            entry["result"] = "bits differ from the base's delayed outputs"
            kills.append(("race_detected", f"outputs changed when warps of parity {parity} were delayed before their "
                          "stores and after barriers (bits differ from the base's delayed run, which equals its "
                          f"plain run): {cause}"))
        else:
            entry["result"] = "same"
    if base_changed:
        record.update(outcome="base_changed", note=f"the base's outputs changed when warps of parity "
                      f"{' and '.join(map(str, base_changed))} were delayed: the delays perturb something besides "
                      "the change, so the member's status is left alone")
        return DelayVerdict(None, "", record)
    if kills:
        status, message = next((k for k in kills if k[0] == "race_detected"), kills[0])
        record.update(outcome=status, note=message)
        return DelayVerdict(status, message, record)
    if unknown:
        record.update(outcome="unknown" if len(unknown) == len(PARITIES) else "no_change_partial",
                      note="; ".join(unknown)[:500])
        return DelayVerdict(None, "", record)
    record.update(outcome="no_change", note="both delayed copies gave the base's outputs")
    return DelayVerdict(None, "", record)


def describe_for_survivor(delays: Optional[dict]) -> str:
    """A survivor's note on the delays tried (``provenance.verify.delays``), or ''."""
    if not delays:
        return ""
    outcome, ns = delays.get("outcome"), delays.get("nanoseconds")
    if outcome == "no_change":
        return (f"delay injection tried: warps of either parity slept {ns} ns before stores and after barriers "
                "and the outputs stayed the base's")
    if outcome == "no_change_partial":
        return f"delay injection tried, one parity only ran and changed nothing ({delays.get('note', '')[:200]})"
    if outcome == "base_changed":
        return f"delay injection tried, inconclusive: {delays.get('note', '')[:200]}"
    return f"delay injection tried, no answer: {delays.get('note', '')[:200]}"


@dataclass
class MemberRuns:
    """A member's plain and delayed runs (label -> {"outputs"} or {"error", "message"})."""
    runs: dict
    placements: dict
    refused: dict


def delay_member_runs(worker, record: KernelRecord, group_id: str, payload: list, timeout: float,
                      nanoseconds: int = DEFAULT_NANOSECONDS) -> MemberRuns:
    """Runs ``record`` plainly and in each delayed copy, one worker job each, so that a
    copy that hangs or kills its worker costs only its own answer. A worker that died
    during a run counts as a crash of that run (as a check's does); one that timed out,
    as a run that did not finish (unknown)."""
    member = delayed_members(record, nanoseconds)
    runs = {}
    for name, copy in member.runs:
        reply = worker.run_outputs([(name, copy.to_json())], group_id, payload, 2 * timeout)
        if reply.get("error"):
            runs[name] = {"error": "crashed" if reply["error"] == "died" else reply["error"],
                          "message": str(reply.get("message", ""))[:300]}
        else:
            runs[name] = (reply.get("runs") or {}).get(name) or {"error": "not_run", "message": "no answer"}
    return MemberRuns(runs, member.placements, member.refused)


def judge_delays(mutant: MemberRuns, base: MemberRuns, base_record: KernelRecord, prepared,
                 nanoseconds: int = DEFAULT_NANOSECONDS, cause: str = DROPPED_BARRIER) -> DelayVerdict:
    """``delay_verdict`` with the first trial's reference and error bound of ``prepared``
    (runner._ProblemTrials); the base counts as deterministic unless its row says otherwise
    or its PTX has floating-point atomics."""
    from ..judge.compare import error_stats
    from ..trials.inputs import exact_values
    from ..judge.outcome import float_atomics

    def within_bound(outputs: dict) -> tuple:
        for spec in prepared.specs:
            if spec.name not in outputs:
                return False, f"output {spec.name} missing"
            out = exact_values(outputs[spec.name], spec.dtype, spec.shape)
            stats = error_stats(out, prepared.references[0][spec.name], spec.bounds[0], spec.dtype)
            if not stats.ok:
                return False, (f"{spec.name}: {stats.n_bad} of {stats.n_total} elements outside the error bound, "
                               f"max |err|/bound {stats.max_err_ratio:.3g}")
        return True, ""

    deterministic = base_record.deterministic is not False and not float_atomics(base_record.ptx)
    placements = {**mutant.placements}
    refused = {**base.refused, **mutant.refused}
    return delay_verdict(mutant.runs, base.runs, within_bound, deterministic, placements, refused, nanoseconds,
                         cause)
