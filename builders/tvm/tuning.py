"""Tuning of the tvm source measured on the GPU: a MetaSchedule ``JSONDatabase`` whose run
times are the ones ``ptxds verify`` measures for every member.

TVM need not be installed where the GPU is: candidates travel as rows of an ordinary tvm
dataset (proposals.py makes them: ``ptxds tune-tvm propose``), and their times come back
through the verified dataset.

- ``commit`` (``ptxds tune-tvm commit``): a verified proposal dataset's rows become
  ``TuningRecord``s: ``run_secs`` is the verifier's median time; a row that did not pass
  (wrong result, crash, build failure) gets ``FAILED_RUN_SECS``, MetaSchedule's own value for
  a failed run, so the search neither picks nor proposes it again. Idempotent by trace.
- tuned members (``ptxds build --source tvm --tuning-db DIR``): for a group whose workload
  and target are in the database, dlight's schedule, the top-k measured records and a spread
  of the rest down to the slowest passing one, each replayed from its trace.
- the database helpers both use (rows.py's ``RowMaker`` turns their schedules into rows).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from dataset_spec.errors import PtxdsError
from dataset_spec.model import BUILD_STATUSES
from builders.base import WorkItem

from .rows import RowMaker

DB_FILES = ("database_workload.json", "database_tuning_record.json")
FAILED_RUN_SECS = 1e10      # what MetaSchedule records for a candidate that failed to build or run
PROPOSAL = "metaschedule-tune"   # variant.generator of a proposal row
TUNED = "metaschedule-tuned"     # variant.generator of a member replayed from the database
MAX_FAILED_ROWS = 10        # build_failed rows kept per item


class TuningError(PtxdsError, ValueError):
    """A tuning database or dataset that cannot be used as asked."""


def require_tvm() -> None:
    """Tuning needs TVM where it runs (propose, commit and build; not verify)."""
    try:
        import tvm  # noqa: F401
    except ImportError:
        raise TuningError("ptxds tune-tvm needs TVM, which is not installed here: pip install -e '.[tvm]' "
                          "(only `ptxds verify` of a proposal dataset runs without it)") from None


def database_digest(db_dir) -> str:
    """sha256 of the two database files (the workload table, then the records)."""
    digest = hashlib.sha256()
    for name in DB_FILES:
        path = Path(db_dir) / name
        digest.update(name.encode() + b"\0" + (path.read_bytes() if path.exists() else b"") + b"\0")
    return digest.hexdigest()


def open_database(db_dir, create: bool = False):
    """MetaSchedule's JSONDatabase in ``db_dir`` (``create``: made when missing)."""
    from tvm.s_tir import meta_schedule as ms
    path = Path(db_dir)
    if not create and not all((path / name).is_file() for name in DB_FILES):
        raise TuningError(f"{db_dir} is not a tuning database (no {' and '.join(DB_FILES)}): run "
                          f"`ptxds tune-tvm commit --db {db_dir} VERIFIED` first, or name another --db")
    path.mkdir(parents=True, exist_ok=True)
    return ms.database.JSONDatabase(work_dir=str(path), allow_missing=create)


def tuning_module(func, target):
    """The IRModule MetaSchedule tunes for ``func`` (its database workload)."""
    from tvm.s_tir import meta_schedule as ms
    return ms.TuneContext(mod=func, target=target, num_threads=1).mod


def workload_records(db, mod) -> tuple:
    """(database workload or None, every record of it, failed ones too); reads only."""
    if not db.has_workload(mod):
        return None, []
    workload = db.commit_workload(mod)   # the table's own entry: nothing is written
    return workload, [r for r in db.get_all_tuning_records() if r.workload.same_as(workload)]


def target_arch(target) -> str:
    return str(target.attrs["arch"])


def check_target(records: list, target, db_dir, group_id: str) -> None:
    """The database's records of a workload were measured for one target: ``target``'s."""
    archs = {target_arch(r.target) for r in records if r.target is not None}
    if archs and archs != {target_arch(target)}:
        raise TuningError(f"{db_dir} holds records of {group_id} for {', '.join(sorted(archs))}, not "
                          f"{target_arch(target)}: give the --arch it measured, or another --db")


def mean_secs(record) -> float:
    secs = [float(s) for s in record.run_secs] if record.run_secs is not None else []
    return sum(secs) / len(secs) if secs else FAILED_RUN_SECS


def passed(record) -> bool:
    return mean_secs(record) < FAILED_RUN_SECS


def to_plain(value):
    """MetaSchedule's JSON form of a trace (FFI arrays, maps and immediates) as plain Python."""
    import tvm
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (tvm.tirx.IntImm, tvm.tirx.FloatImm)):
        return value.value
    if hasattr(value, "items"):
        return {str(k): to_plain(v) for k, v in value.items()}
    return [to_plain(v) for v in value]


def trace_json(trace) -> str:
    return json.dumps(to_plain(trace.as_json()), separators=(",", ":"))


def replay(mod, trace_text: str):
    """A schedule of ``mod`` with the trace in ``trace_text`` (``trace_json``) applied."""
    from tvm import s_tir
    sch = s_tir.Schedule(mod, debug_mask="none")
    s_tir.Trace.apply_json_to_schedule(json.loads(trace_text), sch)
    return sch


# ---- build --tuning-db: the tuned members ---------------------------------------------------

def spread_ranks(passing: int, wanted: int, top: Optional[int] = None) -> list:
    """0-based ranks of the records to build, fastest first: the ``top`` fastest (default:
    half of ``wanted``), then the rest spread evenly over the remaining ranks, ending at the
    slowest passing one."""
    wanted = min(wanted, passing)
    top = min(wanted, (wanted + 1) // 2 if top is None else top)
    rest = wanted - top
    ranks = list(range(top))
    if rest:
        span = passing - 1 - top
        ranks += sorted({top + round(span * (i + 1) / rest) for i in range(rest)})
    return ranks


def tuned_items(builder, workloads: list, db_dir: str, members: int) -> dict:
    """(group_id, arch) -> the work item of its tuned members, for the groups whose workload
    and target the database holds; an error when it holds none of them."""
    from .schedules import cuda_target, prim_func
    from .workloads import build_te
    db = open_database(db_dir)
    digest = database_digest(db_dir)
    items = {}
    for w in workloads:
        func = prim_func(build_te(w), w.symbol)
        for arch in builder.options.archs:
            target = cuda_target(arch)
            workload, records = workload_records(db, tuning_module(func, target))
            records = [r for r in records if r.target is not None and target_arch(r.target) == target_arch(target)]
            top = sorted((r for r in records if passed(r)), key=mean_secs)
            if not top:
                continue
            picks = [{"rank": rank + 1, "trace_json": trace_json(top[rank].trace),
                      "measured_us": mean_secs(top[rank]) * 1e6} for rank in spread_ranks(len(top), members - 1)]
            items[(w.group_id, arch)] = WorkItem(
                key=f"{w.group_id}/{arch}/tuned/{digest[:16]}/n{members}", group_id=w.group_id,
                label=f"{w.name} {w.size} {arch} tuned ({len(records)} trials)",
                payload={"workload": w, "arch": arch, "tuning": "tuned", "picks": picks, "digest": digest,
                         "trials": len(records), "passing": len(top)},
                rows=len(picks) + 1)
    if not items:
        names = ", ".join(database_workloads(db)) or "none"
        raise TuningError(f"the tuning database {db_dir} holds no measured record of the selected workloads for "
                          f"{', '.join(builder.options.archs)} (it holds: {names}): select its workloads and arch, "
                          "or build without --tuning-db")
    return items


def default_workloads() -> list:
    from builders.shapes import load_shape_set
    from .workloads import shaped_workloads
    return shaped_workloads(load_shape_set(None))


def workload_of(group_id: str):
    found = [w for w in default_workloads() if w.group_id == group_id]
    if not found:
        raise TuningError(f"{group_id} is not a tvm workload group of the default sizes, which tuning takes")
    return found[0]


def database_workloads(db) -> list:
    """The ptxds workload groups (and archs) with records in ``db``."""
    from .schedules import cuda_target, prim_func
    from .workloads import build_te
    found = []
    for w in default_workloads():
        func = prim_func(build_te(w), w.symbol)
        _, records = workload_records(db, tuning_module(func, cuda_target("sm_90a")))
        archs = sorted({target_arch(r.target) for r in records if r.target is not None})
        if records:
            found.append(f"{w.group_id} ({', '.join(archs)})")
    return found


def build_tuned_item(builder, item: WorkItem) -> list:
    from .schedules import Schedule, cuda_target, dlight, prim_func
    from .workloads import build_te
    p = item.payload
    w, arch = p["workload"], p["arch"]
    func, target = prim_func(build_te(w), w.symbol), cuda_target(arch)
    mod = tuning_module(func, target)
    rows = RowMaker(builder, w, arch, max_failed=MAX_FAILED_ROWS)
    rows.add(dlight(func, target, w.tensor_core_inputs), {})
    for pick in p["picks"]:
        key = f"tuned/{p['digest'][:16]}/{pick['rank']}"
        try:
            sch = replay(mod, pick["trace_json"])
            schedule = Schedule("metaschedule", key, {"generator": TUNED, "trace": str(sch.trace)}, sch.mod)
        except Exception as exc:  # TVM's own errors
            schedule = Schedule("metaschedule", key, {"generator": TUNED}, error=f"{type(exc).__name__}: {exc}"[:4000])
        rows.add(schedule, {"tuning": {"db_digest": p["digest"], "trials": p["trials"], "passing": p["passing"],
                                       "rank": pick["rank"], "measured_us": pick["measured_us"]}})
    return rows.finish()


# ---- commit --------------------------------------------------------------------------------

@dataclass
class CommitSummary:
    """What one commit added to the database."""
    db_dir: str
    added: int = 0            # records with the verifier's time
    failed: int = 0           # records of rows that did not pass (FAILED_RUN_SECS)
    already: int = 0          # rows whose trace the database held already
    not_measured: int = 0     # rows the verifier did not judge or time (left out)
    workloads: dict = field(default_factory=dict)   # group_id -> records of it after the commit
    digest: str = ""


def commit(db_dir, dataset_dir) -> CommitSummary:
    """Add a verified proposal dataset's measured rows to the database in ``db_dir``."""
    from tvm.s_tir import meta_schedule as ms
    from dataset_spec.store.dataset import Dataset
    from .schedules import cuda_target, prim_func
    from .workloads import build_te
    rows = [r for r in Dataset.open(dataset_dir).records()
            if r.source == "tvm" and r.variant.get("generator") == PROPOSAL]
    if not rows:
        raise TuningError(f"{dataset_dir} holds no tuning candidates: commit what `ptxds verify` wrote for a "
                          "`ptxds tune-tvm propose` dataset")
    if all(r.status in BUILD_STATUSES for r in rows):
        raise TuningError(f"{dataset_dir} is not verified (its candidates have no verifier status): run "
                          f"`ptxds verify {dataset_dir} --out VERIFIED` on a GPU and commit VERIFIED")
    db = open_database(db_dir, create=True)
    summary = CommitSummary(str(db_dir))
    by_workload: dict = {}
    for row in rows:
        by_workload.setdefault((row.group_id, row.arch), []).append(row)
    plans = []   # every workload checked before anything is written
    for (group_id, arch), group_rows in sorted(by_workload.items()):
        if sum(g == group_id for g, _ in by_workload) > 1:
            raise TuningError(f"{dataset_dir} has candidates of {group_id} for several archs; a database holds one "
                              "target per workload: propose and commit one --arch per database")
        w = workload_of(group_id)
        func, target = prim_func(build_te(w), w.symbol), cuda_target(arch)
        mod = tuning_module(func, target)
        _, records = workload_records(db, mod)
        check_target(records, target, db_dir, group_id)
        plans.append((group_id, arch, group_rows, mod, target, records))
    for group_id, arch, group_rows, mod, target, records in plans:
        workload = db.commit_workload(mod)
        args_info = ms.arg_info.ArgInfo.from_prim_func(mod["main"])
        known = {trace_json(r.trace) for r in records}
        for row in group_rows:
            if row.status == "passed" and row.time_us_median:
                run_secs = [row.time_us_median * 1e-6]
            elif row.status == "passed" or (row.status in BUILD_STATUSES and row.status != "build_failed"):
                summary.not_measured += 1   # not judged (a --groups selection), or verified without timing
                continue
            else:
                run_secs = [FAILED_RUN_SECS]   # did not build, or the verifier failed it
            if "trace_json" not in row.variant:   # TVM could not schedule it: no trace to keep
                summary.not_measured += 1
                continue
            trace = replay(mod, row.variant["trace_json"]).trace
            text = trace_json(trace)
            if text in known:
                summary.already += 1
                continue
            known.add(text)
            db.commit_tuning_record(ms.database.TuningRecord(trace, workload, run_secs, target, args_info))
            if run_secs[0] < FAILED_RUN_SECS:
                summary.added += 1
            else:
                summary.failed += 1
        summary.workloads[f"{group_id} {arch}"] = len(known)
    summary.digest = database_digest(db_dir)
    return summary
