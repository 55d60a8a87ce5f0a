"""``ptxds tune-tvm``: rounds of MetaSchedule tuning whose run times come from ``ptxds
verify`` (builders/tvm/tuning.py holds the logic). A round proposes candidates as a tvm
dataset, verifies and times them on a GPU, and commits the times to the database; ``run``
does whole rounds on a machine that has TVM and a GPU."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from builders.base import BuildOptions

TUNE_ARCH = "sm_90a"


def propose(db_dir, workloads: list, candidates: int, out_dir, archs=(TUNE_ARCH,), seed: int = 0,
            jobs: int = 0, progress: bool = True):
    """The next ``candidates`` schedules of each workload as a tvm dataset in ``out_dir``."""
    from .pipeline import run_build
    # the builder checks for TVM and opens (or makes) the database before building anything
    options = BuildOptions(archs=list(archs), sample_seed=seed, extra={
        "workloads": list(workloads), "tuning_db": str(db_dir), "propose": int(candidates)})
    return run_build("tvm", out_dir, options, jobs=jobs, progress=progress)


@dataclass
class RoundResult:
    """One round of ``run``: where its candidates went, and what the commit added."""
    proposed: str
    verified: str
    rows: int
    commit: object


@dataclass
class RunSummary:
    rounds: list = field(default_factory=list)


def run_rounds(db_dir, workloads: list, rounds: int, candidates: int, out_dir, archs=(TUNE_ARCH,), seed: int = 0,
               jobs: int = 0, progress: bool = True, verify_options: dict | None = None) -> RunSummary:
    """``rounds`` times: propose into ``out_dir/round-<i>``, verify (and time) it on this
    machine's GPU into ``out_dir/round-<i>-verified``, commit that to the database."""
    from builders import source_credits
    from builders.tvm.tuning import commit, require_tvm
    from dataset_spec.dataset import Dataset
    from verify import verify_dataset
    from verify.driver import init as require_gpu
    require_tvm()
    require_gpu()   # a machine without a GPU is one line before any candidate is built
    summary = RunSummary()
    for index in range(rounds):
        proposed = Path(out_dir) / f"round-{index}"
        verified = Path(out_dir) / f"round-{index}-verified"
        build = propose(db_dir, workloads, candidates, proposed, archs, seed, jobs, progress)
        verify_dataset(proposed, verified, progress=progress, **(verify_options or {}))
        Dataset(verified, credits=source_credits).publish()
        summary.rounds.append(RoundResult(str(proposed), str(verified), build.rows_written, commit(db_dir, verified)))
    return summary
