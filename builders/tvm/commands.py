"""``ptxds tune-tvm``, the tvm source's own commands (builders/commands.py is the hook):
rounds of MetaSchedule tuning whose run times come from ``ptxds verify`` (tuning.py holds
the logic). A round proposes candidates as a tvm dataset, verifies and times them on a GPU,
and commits the times to the database; ``run`` does whole rounds on a machine that has TVM
and a GPU. The build and the verifier come from the ``CommandHost`` the CLI lends."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import click

from builders.base import BuildOptions

TUNE_ARCH = "sm_90a"


def propose(host, db_dir, workloads: list, candidates: int, out_dir, archs=(TUNE_ARCH,), seed: int = 0,
            jobs: int = 0, progress: bool = True):
    """The next ``candidates`` schedules of each workload as a tvm dataset in ``out_dir``."""
    from .builder import TvmOptions
    # the builder checks for TVM and opens (or makes) the database before building anything
    settings = TvmOptions(workloads=tuple(workloads), tuning_db=str(db_dir), propose=candidates)
    options = BuildOptions(archs=list(archs), sample_seed=seed, settings=settings)
    return host.build("tvm", out_dir, options, jobs=jobs, progress=progress)


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


def run_rounds(host, db_dir, workloads: list, rounds: int, candidates: int, out_dir, archs=(TUNE_ARCH,),
               seed: int = 0, jobs: int = 0, progress: bool = True, verify_settings: dict | None = None) -> RunSummary:
    """``rounds`` times: propose into ``out_dir/round-<i>``, verify (and time) it on this
    machine's GPU into ``out_dir/round-<i>-verified``, commit that to the database.
    ``verify_settings``: ``verify.VerifyOptions`` fields for every round's verify."""
    from .tuning import commit, require_tvm
    require_tvm()
    host.require_gpu()   # a machine without a GPU is one line before any candidate is built
    summary = RunSummary()
    for index in range(rounds):
        proposed = Path(out_dir) / f"round-{index}"
        verified = Path(out_dir) / f"round-{index}-verified"
        build = propose(host, db_dir, workloads, candidates, proposed, archs, seed, jobs, progress)
        host.verify(proposed, verified, progress=progress, **(verify_settings or {}))
        summary.rounds.append(RoundResult(str(proposed), str(verified), build.rows_written, commit(db_dir, verified)))
    return summary


def tune_tvm(host) -> click.Group:
    """The ``tune-tvm`` group: propose, commit, run."""

    @click.group("tune-tvm")
    def group():
        """Tune the tvm source's schedules on times measured by ptxds verify, in a MetaSchedule database.

        A round: propose (here, with TVM) -> ptxds verify (on a GPU) -> commit (here). Then
        ptxds build --source tvm --tuning-db DB builds the measured schedules as members.
        """

    def tune_options(func):
        func = click.option("--seed", type=int, default=0, show_default=True, help="seeds round 0's samples")(func)
        func = click.option("--arch", default=TUNE_ARCH, show_default=True,
                            help="the target the candidates are built and measured for")(func)
        func = click.option("--candidates", type=click.IntRange(min=1), default=64, show_default=True,
                            help="candidates per workload and round")(func)
        func = click.option("--workloads", "workloads", multiple=True, required=True,
                            help="tvm workload groups to tune, e.g. matmul_fp16/large (repeatable or "
                                 "comma-separated)")(func)
        return click.option("--db", "db_dir", required=True, type=click.Path(file_okay=False),
                            help="the tuning database folder (made when missing)")(func)

    @group.command("propose")
    @tune_options
    @click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
                  help="dataset folder of the candidates")
    @click.option("--jobs", type=click.IntRange(min=1), default=None, help="worker processes (default: all cores)")
    @host.silent_option
    @host.errors
    def propose_command(db_dir, workloads, candidates, arch, seed, out_dir, jobs, silent):
        """The next candidates of each workload as a tvm dataset: seeded samples while the
        database has no record of it, then MetaSchedule's evolutionary search from the records.

        Example:

            ptxds tune-tvm propose --db tune/db --workloads matmul_fp16/large --candidates 64 --out tune/r0
        """
        summary = propose(host, db_dir, list(workloads), candidates, out_dir, host.parse_archs(arch), seed,
                          jobs or 0, not silent)
        host.print_build_summary(summary)
        click.echo(f"next: ptxds verify {out_dir} --out {out_dir}-verified (on a GPU), then "
                   f"ptxds tune-tvm commit --db {db_dir} {out_dir}-verified")

    @group.command("commit")
    @click.option("--db", "db_dir", required=True, type=click.Path(file_okay=False), help="the tuning database folder")
    @click.argument("dataset", type=click.Path(exists=True, file_okay=False))
    @host.errors
    def commit_command(db_dir, dataset):
        """Add a verified candidate dataset's times to the database (again: adds nothing).

        Example:

            ptxds tune-tvm commit --db tune/db tune/r0-verified
        """
        from .tuning import commit, require_tvm
        require_tvm()
        summary = commit(db_dir, dataset)
        click.echo(f"{db_dir}: {summary.added} measured record(s) added, {summary.failed} failed run(s) recorded "
                   f"(run_secs 1e10), {summary.already} already there, {summary.not_measured} row(s) not measured")
        for workload, count in summary.workloads.items():
            click.echo(f"  {workload}: {count} records")
        click.echo(f"database sha256: {summary.digest}")

    @group.command("run")
    @tune_options
    @click.option("--rounds", type=click.IntRange(min=1), default=3, show_default=True,
                  help="propose-verify-commit rounds")
    @click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
                  help="folder for each round's candidates (round-<i>) and verified rows (round-<i>-verified)")
    @click.option("--jobs", type=click.IntRange(min=1), default=None, help="build worker processes (default: all cores)")
    @host.silent_option
    @host.errors
    def run_command(db_dir, workloads, candidates, arch, seed, rounds, out_dir, jobs, silent):
        """Whole rounds on a machine with TVM and a GPU: propose, verify, commit, --rounds times.

        Example:

            ptxds tune-tvm run --db tune/db --workloads matmul_fp16/large --rounds 3 --out tune
        """
        summary = run_rounds(host, db_dir, list(workloads), rounds, candidates, out_dir, host.parse_archs(arch), seed,
                             jobs or 0, not silent)
        for index, result in enumerate(summary.rounds):
            click.echo(f"round {index}: {result.rows} candidate rows -> {result.verified}; "
                       f"{result.commit.added} measured, {result.commit.failed} failed")
        click.echo(f"database sha256: {summary.rounds[-1].commit.digest}")

    return group
