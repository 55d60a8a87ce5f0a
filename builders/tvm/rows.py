"""Rows of the tvm source from a stream of schedules (sampled, tuned or proposed): each is
lowered and compiled; one that TVM or nvcc cannot build is a ``build_failed`` row (a few
kept, the rest counted); one whose launch is under a wave at a large size, or whose PTX
repeats an earlier member's, is dropped and counted in ``provenance.tvm``."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from ptx_tools import CompileError, ptx_hash
from ptx_tools.ptx_cache import cached_ptx

MIN_LARGE_GRID = 132       # blocks per launch of a large workload: one wave on an H100
DRAWS_PER_MEMBER = 500     # draws of any kind per wanted member (a large matmul passes the check ~1 in 40)


def failure_message(where: str, exc: Exception) -> str:
    """A build_failed row's message: nvcc's first line and log, or TVM's error."""
    if isinstance(exc, CompileError):
        return f"{where}: {str(exc).splitlines()[0]}\n{exc.log}"[:8000]
    return f"{where}: {type(exc).__name__}: {exc}"[:8000]


@dataclass
class RowMaker:
    """Rows of one item from schedules: lowered, compiled, deduplicated by PTX, with the
    builder's records (``_record``) and launches (``_attach_launches``); ``max_failed``
    build_failed rows are kept."""
    builder: object
    workload: object
    arch: str
    max_failed: int
    records: list = field(default_factory=list)
    seen: set = field(default_factory=set)
    stats: dict = field(default_factory=lambda: {"attempts": 0, "rejected": 0, "underfilled": 0,
                                                 "duplicates_dropped": 0, "failed": 0})

    def __post_init__(self):
        from .schedules import cuda_target
        from .workloads import problem
        # once per item: an item may draw hundreds of schedules
        self.problem, self.target = problem(self.workload), cuda_target(self.arch)

    @property
    def built(self) -> int:
        return sum(r.status == "built" for r in self.records)

    def reject(self) -> None:
        """A sample outside the GPU's limits (MetaSchedule's postprocessors): drawn again."""
        self.stats["attempts"] += 1
        self.stats["rejected"] += 1

    def add(self, sch, provenance: dict) -> None:
        from .lower import LoweringError, lower
        w = self.workload
        self.stats["attempts"] += 1
        record = self.builder._record(w, self.arch, self.problem, sch)
        record.provenance.update(provenance)
        lowered = None
        if sch.error:
            record.status, record.status_message = "build_failed", f"{w.group_id} {sch.key}: {sch.error}"
        else:
            try:
                lowered = lower(sch.mod, self.target, sch.pass_config)
                if w.size == "large" and min(math.prod(k.grid) for k in lowered.launches) < MIN_LARGE_GRID:
                    self.stats["underfilled"] += 1   # less than one wave: slow to verify, drawn again
                    return
                record.ptx = cached_ptx(lowered.cuda, self.arch, "tvm")
            except LoweringError as exc:
                record.status, record.status_message = "build_failed", f"{w.group_id} {sch.key}: {exc}"
            except Exception as exc:  # nvcc's, or TVM's own errors while lowering
                record.status, record.status_message = "build_failed", failure_message(f"{w.group_id} {sch.key}", exc)
        if record.status == "build_failed":
            self.stats["failed"] += 1
            if self.stats["failed"] <= self.max_failed:   # keep a few failures, not one per draw
                self.records.append(record)
            return
        digest = ptx_hash(record.ptx)
        if digest in self.seen:
            self.stats["duplicates_dropped"] += 1
            return
        self.seen.add(digest)
        self.builder._attach_launches(record, lowered)
        self.records.append(record)

    def finish(self) -> list:
        for record in self.records:
            record.provenance["tvm"] = dict(self.stats)
        return self.records
