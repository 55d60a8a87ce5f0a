"""Read a dataset folder into the plain numbers a report shows: a summary, per-group member
times and failures, cross-group speed data, the ``pairs`` balance and the verifier's
evidence. No plotting here, so ``ptxds info`` can print the same numbers without matplotlib."""
from __future__ import annotations

import json
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from dataset_spec.errors import PtxdsError
from dataset_spec.store.card import output_dtype, weakest_catches
from dataset_spec.model import BUILD_STATUSES
from dataset_spec.store.group_stats import GroupStats, group_stats
from dataset_spec.store.shards import latest_rows, not_a_dataset_reason, read_table

# The schedule knobs a report can plot time against, in the order it shows them.
KNOBS = ("tile", "stages", "warps", "schedule")
_COLUMNS = ["build_key", "kernel_id", "group_id", "source", "name", "arch", "op", "variant",
            "problem", "resources", "features", "toolchain", "provenance", "status",
            "status_message", "max_err_ratio", "catches_rel_err", "trials", "deterministic",
            "sanitizer", "time_us_median", "time_us_iqr", "time_us_min", "time_samples",
            "time_method", "time_us_events_median", "gpu_name", "sm_clock_mhz",
            "driver_version", "launches"]


class EmptyDatasetError(PtxdsError, ValueError):
    """The folder is not a dataset folder (no kernel rows)."""


@dataclass
class Member:
    kernel_id: str
    name: str
    source: str
    arch: str
    status: str
    status_message: str
    knobs: dict  # tile, stages, warps, schedule as text (None when the source has no such knob)
    variant: dict
    features: list
    registers: int | None
    shared_bytes: int | None  # static + the largest dynamic shared memory of its launches
    spills: int | None  # spill stores + loads over its entries
    time_us_median: float | None = None
    time_us_iqr: float | None = None
    time_us_min: float | None = None
    max_err_ratio: float | None = None

    @property
    def timed(self) -> bool:
        return self.status == "passed" and bool(self.time_us_median)


@dataclass
class Group:
    group_id: str
    op: str
    shape: str
    dtype: str
    members: list

    @property
    def stats(self) -> GroupStats:
        """Members, passed, fastest and spread: the numbers the card and verify print too."""
        return group_stats(self.members)

    @property
    def timed(self) -> list:
        """Passing, timed members, fastest first (ties by name, as in ``stats``)."""
        return sorted((m for m in self.members if m.timed), key=lambda m: (m.time_us_median, m.name))

    @property
    def failures(self) -> list:
        return [m for m in self.members if m.status not in ("passed",) + BUILD_STATUSES]

    @property
    def fastest(self) -> Member | None:
        timed = self.timed
        return timed[0] if timed else None

    @property
    def slowest(self) -> Member | None:
        timed = self.timed
        return timed[-1] if timed else None

    @property
    def spread(self) -> float | None:
        """Slowest over fastest passing member (None with fewer than two timed members)."""
        return self.stats.spread


@dataclass
class Summary:
    dataset: str
    rows: int
    groups: int
    members_min: int
    members_max: int
    sources: dict
    archs: dict
    statuses: dict
    shapes: dict
    verified: bool
    gpus: dict = field(default_factory=dict)
    sm_clocks_mhz: dict = field(default_factory=dict)
    drivers: dict = field(default_factory=dict)
    time_methods: dict = field(default_factory=dict)
    toolchains: dict = field(default_factory=dict)  # source -> sorted "tool version" strings


@dataclass
class PairBalance:
    counts: dict  # (label_source, "equivalent" | "different") -> rows

    @property
    def total(self) -> int:
        return sum(self.counts.values())


@dataclass
class Evidence:
    trial_kinds: dict  # kind -> groups that ran it
    trials_per_row: dict  # trials -> rows
    err_ratios: list  # max_err_ratio of passing rows
    sensitivity: dict  # "op dtype" -> weakest catches_rel_err of its groups
    error_bounds: dict  # op -> one recorded bound description
    time_methods: dict
    samples_median: float | None
    relative_iqr: list  # time_us_iqr / time_us_median of timed rows
    events_over_kernel: list  # time_us_events_median / time_us_median (launch overhead)
    deterministic: dict  # "yes" | "no" -> rows
    sanitizer: dict  # "clean" | "findings" | "failed to run" | "not run" -> rows


@dataclass
class Report:
    summary: Summary
    groups: list
    pairs: PairBalance
    evidence: Evidence

    def slowdowns(self) -> list:
        """(member, its time over its group's fastest) for every timed member."""
        out = []
        for group in self.groups:
            fastest = group.fastest
            for member in group.timed:
                out.append((member, member.time_us_median / fastest.time_us_median))
        return out


def gather(root) -> Report:
    """Every number of a report for the dataset folder ``root``."""
    root = Path(root)
    reason = not_a_dataset_reason(root)
    if reason:
        raise EmptyDatasetError(reason)
    rows = latest_rows(read_table(root, "kernels", columns=_COLUMNS).to_pylist())
    groups = _groups(rows)
    return Report(summary=_summary(root, rows, groups), groups=groups,
                  pairs=_pair_balance(root), evidence=_evidence(rows))


def _loads(text) -> dict:
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def canonical_knobs(variant: dict) -> dict:
    """The source's own knobs under common names: tile, stages, warps, schedule."""
    tile = None
    if variant.get("threadblock_tile"):
        tile = "x".join(str(v) for v in variant["threadblock_tile"])
    elif any(k in variant for k in ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K")):
        tile = "x".join(str(variant[k]) for k in ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K") if k in variant)
    elif any(k.startswith("BLOCK") for k in variant):
        tile = "x".join(str(variant[k]) for k in sorted(variant) if k.startswith("BLOCK"))
    elif variant.get("tile") is not None:
        tile = _text(variant["tile"])
    stages = variant.get("stages", variant.get("num_stages"))
    warps = variant.get("num_warps")
    if warps is None and isinstance(variant.get("warp_count"), list):
        warps = 1
        for count in variant["warp_count"]:
            warps *= count
    schedule = variant.get("kernel_schedule")
    if schedule is None and variant.get("mugraph") is not None:
        schedule = f"mugraph {variant['mugraph']}"
    if schedule is None:
        schedule = variant.get("schedule", variant.get("style"))
    return {"tile": _text(tile), "stages": _text(stages), "warps": _text(warps), "schedule": _text(schedule)}


def _text(value):
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return "x".join(str(v) for v in value)
    return str(value)


def _member(row: dict) -> Member:
    variant = _loads(row["variant"])
    resources = row["resources"] or []
    dynamic = max((launch.get("dynamic_smem") or 0 for launch in row["launches"] or []), default=0)
    return Member(
        kernel_id=row["kernel_id"], name=row["name"] or "", source=row["source"], arch=row["arch"],
        status=row["status"], status_message=row["status_message"] or "",
        knobs=canonical_knobs(variant), variant=variant, features=list(row["features"] or []),
        registers=max((r["registers"] for r in resources if r["registers"] is not None), default=None),
        shared_bytes=(max((r["shared_static"] or 0 for r in resources), default=0) + dynamic) if resources else None,
        spills=sum((r["spill_stores"] or 0) + (r["spill_loads"] or 0) for r in resources) if resources else None,
        time_us_median=row["time_us_median"], time_us_iqr=row["time_us_iqr"],
        time_us_min=row["time_us_min"], max_err_ratio=row["max_err_ratio"])


def _groups(rows: list) -> list:
    from builders.shapes import group_shape
    by_group = defaultdict(list)
    for row in rows:
        by_group[row["group_id"]].append(row)
    groups = []
    for group_id, members in sorted(by_group.items()):
        first = members[0]
        problem = _loads(first["problem"])
        groups.append(Group(group_id=group_id, op=first["op"] or problem.get("op", "?"),
                            shape=group_shape(group_id, first["problem"]), dtype=output_dtype(problem),
                            members=[_member(r) for r in members]))
    return groups


def _toolchain_text(toolchain: dict) -> list:
    return [f"{tool} {version}" for tool, version in sorted(toolchain.items())
            if isinstance(version, (str, int, float))]


def _summary(root: Path, rows: list, groups: list) -> Summary:
    sizes = [len(g.members) for g in groups]
    toolchains = defaultdict(set)
    for row in rows:
        toolchains[row["source"]].update(_toolchain_text(_loads(row["toolchain"])))
    counted = lambda column: dict(Counter(r[column] for r in rows if r[column] is not None))
    return Summary(
        dataset=str(root), rows=len(rows), groups=len(groups),
        members_min=min(sizes), members_max=max(sizes),
        sources=counted("source"), archs=counted("arch"), statuses=counted("status"),
        shapes=dict(Counter(g.shape for g in groups)),
        verified=any(r["status"] not in BUILD_STATUSES for r in rows),
        gpus=counted("gpu_name"), sm_clocks_mhz=counted("sm_clock_mhz"),
        drivers=counted("driver_version"), time_methods=counted("time_method"),
        toolchains={s: sorted(t) for s, t in sorted(toolchains.items())})


def _pair_balance(root: Path) -> PairBalance:
    table = read_table(root, "pairs", columns=["equivalent", "label_source"]).to_pylist()
    counts = Counter((r["label_source"], "equivalent" if r["equivalent"] else "different") for r in table)
    return PairBalance(counts=dict(sorted(counts.items())))


def _evidence(rows: list) -> Evidence:
    kinds_by_group, bounds = {}, {}
    for row in rows:
        verify = _loads(row["provenance"]).get("verify") or {}
        if verify.get("trial_kinds"):
            kinds_by_group[row["group_id"]] = verify["trial_kinds"]
        if verify.get("error_bound") and row["op"] not in bounds:
            bounds[row["op"]] = verify["error_bound"]
    sensitivity = {f"{op} {dtype}": value for (op, dtype), value in weakest_catches(rows).items()}
    timed = [r for r in rows if r["status"] == "passed" and r["time_us_median"]]
    samples = [r["time_samples"] for r in timed if r["time_samples"]]
    return Evidence(
        trial_kinds=dict(Counter(k for kinds in kinds_by_group.values() for k in kinds)),
        trials_per_row=dict(Counter(r["trials"] for r in rows if r["trials"] is not None)),
        err_ratios=[r["max_err_ratio"] for r in rows if r["status"] == "passed" and r["max_err_ratio"] is not None],
        sensitivity=dict(sorted(sensitivity.items())),
        error_bounds=dict(sorted(bounds.items())),
        time_methods=dict(Counter(r["time_method"] for r in timed if r["time_method"])),
        samples_median=statistics.median(samples) if samples else None,
        relative_iqr=[r["time_us_iqr"] / r["time_us_median"] for r in timed if r["time_us_iqr"] is not None],
        events_over_kernel=[r["time_us_events_median"] / r["time_us_median"] for r in timed
                            if r["time_us_events_median"]],
        deterministic=dict(Counter({True: "yes", False: "no"}[r["deterministic"]]
                                   for r in rows if r["deterministic"] is not None)),
        sanitizer=dict(Counter(_sanitizer_state(r["sanitizer"]) for r in rows
                               if r["status"] not in BUILD_STATUSES)))


def _sanitizer_state(text) -> str:
    if not text:
        return "not run"
    per_tool = [v for v in _loads(text).values() if isinstance(v, dict)]
    if any(v.get("errors") for v in per_tool):
        return "findings"
    return "failed to run" if any(v.get("failed") for v in per_tool) else "clean"
