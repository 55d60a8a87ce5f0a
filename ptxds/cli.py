"""The ``ptxds`` command line: thin click commands that parse options, call one library
function and print a summary. Library errors become one-line ``Error:`` messages."""
from __future__ import annotations

import contextlib
import functools
import json
import logging
import secrets
import shlex
import signal
import sys
from collections import Counter
from pathlib import Path

import click

from builders import BUILDERS, source_classes, source_credits
from builders.options import field_type, option_fields
from dataset_spec.errors import PtxdsError

KNOWN_ARCHS = ("sm_80", "sm_86", "sm_89", "sm_90", "sm_90a")
SOURCE_CLASSES = source_classes()  # their Options give ``build`` its source flags


def library_errors(func):
    """Turn the library's expected failures (every ``PtxdsError``, a missing file, a folder
    that cannot be written, a damaged part file) into one-line click errors naming cause
    and fix."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except (PtxdsError, FileNotFoundError) as exc:
            message = exc.one_line() if isinstance(exc, PtxdsError) else str(exc).splitlines()[0]
            # an option the chosen source does not take is a usage error, like click's own
            raise (click.UsageError if getattr(exc, "usage", False) else click.ClickException)(message) from None
        except Exception as exc:  # noqa: BLE001 (only the two kinds below are reworded)
            message = _damaged_folder_message(exc, kwargs) or _os_error_message(exc)
            if message:
                raise click.ClickException(message) from None
            raise
    return wrapper


def _damaged_folder_message(exc: Exception, kwargs: dict) -> str:
    """For a Parquet reader's error: the damaged part file of a dataset folder the command
    was given, and how to recover ('' when the error is something else)."""
    try:
        import pyarrow as pa
    except ImportError:
        return ""
    if not isinstance(exc, pa.ArrowException):
        return ""
    from dataset_spec.store.dataset import damaged_message, damaged_parts
    folders = [kwargs.get("dataset"), kwargs.get("out_dir"), *(kwargs.get("datasets") or ())]
    for folder in folders:
        if folder and Path(folder).is_dir():
            damaged = damaged_parts(folder)
            if damaged:
                return damaged_message(damaged)
    return ""


def _os_error_message(exc: Exception) -> str:
    """One line for a failed read or write of the file system (a read-only folder, a full
    disk); '' for anything else."""
    import errno
    if not isinstance(exc, OSError) or exc.errno is None:
        return ""
    if exc.errno == errno.EPIPE:
        return ""  # output piped into a reader that stopped (| head): click ends quietly
    where = f" {exc.filename}" if exc.filename else ""
    if exc.errno == errno.ENOSPC:
        return (f"no space left on the device{' of' + where if where else ''}; free some space and run the same "
                "command again (a build or verify resumes where it stopped)")
    if exc.errno in (errno.EACCES, errno.EROFS, errno.EPERM):
        return f"cannot write{where}: {exc.strerror}; give a folder you can write"
    return f"{exc.strerror or exc}:{where}" if where else f"{exc.strerror or exc}"


def executor_options(func):
    """``--executor`` and ``--address``, shared by build and verify."""
    func = click.option("--address", default=None,
                        help="ray: the cluster to join (host:port, or auto for the one ray start began); "
                             "default: RAY_ADDRESS, else a new local Ray")(func)
    return click.option("--executor", type=click.Choice(["local", "ray"]), default="local", show_default=True,
                        help="where the work runs: local processes, or Ray tasks/actors on a cluster")(func)


# The library's lines for long steps (an attention domain search, a slow first work item):
# shown on stderr with the progress bars, hidden by --silent; a library caller sees none.
PROGRESS_LOGGER = "ptxds.progress"


class _EchoHandler(logging.Handler):
    def emit(self, record):
        click.echo(self.format(record), err=True)  # click's current stderr, as CliRunner swaps it


def silent_option(func):
    """``--silent``: no progress bar and none of the library's progress lines. The command
    gets ``silent``; its progress lines are shown while it runs unless it is set."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        logger = logging.getLogger(PROGRESS_LOGGER)
        if kwargs.get("silent"):
            return func(*args, **kwargs)
        handler = _EchoHandler()
        logger.addHandler(handler)
        level = logger.level
        logger.setLevel(logging.INFO)
        try:
            return func(*args, **kwargs)
        finally:
            logger.removeHandler(handler)
            logger.setLevel(level)
    return click.option("--silent", is_flag=True, help="no progress bar or progress lines")(wrapper)


def _executor(name: str, address, jobs: int = 0):
    from .executors import make_executor
    return make_executor(name, address, jobs)


def _parse_archs(value: str) -> list:
    archs = [a.strip() for a in value.split(",") if a.strip()]
    if not archs:
        raise click.BadParameter(f"give at least one arch, comma-separated: {', '.join(KNOWN_ARCHS)}",
                                 param_hint="'--arch'")
    bad = [a for a in archs if a not in KNOWN_ARCHS]
    if bad:
        raise click.BadParameter(f"unknown arch {bad[0]!r}; use one of {', '.join(KNOWN_ARCHS)}",
                                 param_hint="'--arch'")
    return archs


@click.group()
@click.version_option(package_name="ptxds")
def cli():
    """Build, verify and publish datasets of PTX equivalence groups."""


class SourceChoice(click.Choice):
    """``--source``: one of the registered sources (listed in the help); another name is a
    usage error that lists them."""

    def __init__(self):
        super().__init__(sorted(BUILDERS))

    def convert(self, value, param, ctx):
        if value not in self.choices:
            raise click.UsageError(f"unknown source {value!r}; known sources: {', '.join(self.choices)}", ctx)
        return value


def source_options(func):
    """One flag per source option that declares one (builders/options.py), drawn from every
    registered source's ``Options``; the help names the sources taking it."""
    seen: dict = {}
    for source, cls in SOURCE_CLASSES.items():
        for name, field in option_fields(cls.Options).items():
            if field.metadata.get("flag"):
                seen.setdefault(name, (field, []))[1].append(source)
    for name, (field, sources) in reversed(list(seen.items())):
        meta = field.metadata
        kind, _ = field_type(SOURCE_CLASSES[sources[0]].Options, field)
        if meta.get("choices"):
            kind = click.Choice(list(meta["choices"]))
        elif meta.get("path"):
            kind = click.Path(exists=True, file_okay=meta["path"] in ("file", "any"),
                              dir_okay=meta["path"] in ("dir", "any"))
        elif meta.get("min") is not None:
            kind = click.IntRange(min=meta["min"]) if kind is int else click.FloatRange(min=meta["min"])
        func = click.option(meta["flag"], name, type=kind, multiple=bool(meta.get("multiple")),
                            default=None if meta.get("multiple") else field.default,
                            show_default=bool(meta.get("show_default")),
                            help=f"{', '.join(sources)}: {meta.get('help', '')}")(func)
    return func


def _given_source_options(flags: dict) -> dict:
    """The source options the user typed on the command line, whatever their value (one
    equal to a default still counts: it names the option, which the chosen source must
    take)."""
    ctx = click.get_current_context()
    return {name: value for name, value in flags.items()
            if ctx.get_parameter_source(name) not in (None, click.core.ParameterSource.DEFAULT)}


@cli.command()
@click.option("--source", "source", required=True, type=SourceChoice(), help="where the kernels come from")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="dataset folder")
@click.option("--arch", "arch", default="sm_80,sm_90a", show_default=True, help="comma-separated targets")
@click.option("--limit", type=click.IntRange(min=1), default=None,
              help="build at most N rows: whole work items are taken, in order (or sampled with --sample-seed), "
                   "while their rows fit in N; the first item is always built (a TVM item is one group's "
                   "schedule search, --schedules rows; a Triton or CUTLASS item is one kernel, one row per size)")
@click.option("--sample-seed", type=int, default=None, help="with --limit: sample items with this seed")
@click.option("--jobs", type=click.IntRange(min=1), default=None, help="local: worker processes (default: all cores)")
@source_options
@click.option("--option", "option_pairs", multiple=True, metavar="KEY=VALUE",
              help="a source option by its name, e.g. --option batch_size=4 (repeatable; the fields of the "
                   "source's Options dataclass)")
@click.option("--options", "options_file", type=click.Path(exists=True, dir_okay=False),
              help="a YAML/JSON mapping of source options (flags and --option win over it)")
@click.option("--shapes", default="default", show_default=True,
              help=f"{', '.join(n for n, c in SOURCE_CLASSES.items() if c.takes_shapes)}: problem sizes, a set "
                   "(default, llm, sweep, crossource) or a YAML/JSON file; each size is its own group")
@click.option("--sass/--no-sass", default=False, help="store each row's SASS text")
@executor_options
@click.option("--cache", "cache_dir", default=None, type=click.Path(file_okay=False),
              help="compile cache folder shared by every worker (a shared file system on a cluster); "
                   "default: each machine's own")
@silent_option
@click.option("--dry-run", is_flag=True,
              help="print the work items, the rows they give and a time estimate; build nothing")
@click.option("--flush-rows", type=click.IntRange(min=1), default=64, hidden=True, help="rows per part file")
@library_errors
def build(source, out_dir, arch, limit, sample_seed, jobs, option_pairs, options_file, shapes, sass,
          executor, address, cache_dir, silent, dry_run, flush_rows, **source_flags):
    """Build a source's equivalence groups into a dataset folder (safe to rerun: resumes).

    Example:

        ptxds build --source triton --out data/triton --arch sm_80,sm_90a

        ptxds build --source cutlass --out data/cutlass --executor ray --address auto --cache /shared/ptxds-cache
    """
    from builders import resolve_source_options
    from builders.base import BuildOptions
    from builders.options import load_options_file, parse_option_pairs
    from builders.shapes import load_shape_set
    from .pipeline import run_build
    if sample_seed is not None and limit is None:
        raise click.UsageError("--sample-seed picks which work items --limit keeps; give --limit N too")
    archs = _parse_archs(arch)
    values = {**(load_options_file(options_file) if options_file else {}), **parse_option_pairs(option_pairs),
              **_given_source_options(source_flags)}
    # shapes set with --option or --options counts, unless --shapes itself was given
    option_shapes = values.pop("shapes", None)
    if option_shapes is not None:
        if click.get_current_context().get_parameter_source("shapes") == click.core.ParameterSource.COMMANDLINE:
            if str(option_shapes) != shapes:
                raise click.UsageError(f"--shapes {shapes} and the option shapes={option_shapes} disagree; give one")
        else:
            shapes = str(option_shapes)
    load_shape_set(shapes)  # a bad name or file is one line before any work
    source, settings = resolve_source_options(source, values, shapes)
    options = BuildOptions(archs=archs, limit=limit, sample_seed=sample_seed or 0, settings=settings)
    if sass and not dry_run:
        _require_nvdisasm()
    if dry_run:
        from .pipeline import plan_build
        _print_plan(plan_build(source, out_dir, options), jobs)
        return
    runner = _executor(executor, address, jobs or 0)
    command = "ptxds " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:2] == ["build"] else ""
    try:
        with _sigterm_interrupts():
            summary = run_build(source, out_dir, options, sass=sass, progress=not silent,
                                flush_rows=flush_rows, executor=runner, cache_dir=cache_dir, command=command)
    finally:
        runner.close()
    _print_build_summary(summary)
    if summary.interrupted:
        raise click.ClickException("interrupted; run the same command again to resume")
    if summary.failed_items and not summary.rows_written and len(summary.failed_items) >= summary.items_total \
            - summary.items_skipped:
        label, message = summary.failed_items[0]
        raise click.ClickException(f"every work item failed ({len(summary.failed_items)}), nothing was written; "
                                   f"the first: {label}: {str(message).splitlines()[0] if message else ''}")


@contextlib.contextmanager
def _sigterm_interrupts():
    """SIGTERM (a scheduler's stop, ``kill``) ends a build as Ctrl-C does: the rows made so
    far are written and the card is published, so the folder stays loadable."""
    def interrupt(signum, frame):
        raise KeyboardInterrupt
    try:
        previous = signal.signal(signal.SIGTERM, interrupt)
    except ValueError:  # not the main thread (a library caller): leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _require_nvdisasm() -> None:
    """``--sass`` disassembles with nvdisasm, which the ``sass`` extra installs."""
    from ptx_tools import find_tool
    from ptx_tools.errors import ToolchainError
    try:
        find_tool("nvdisasm")
    except ToolchainError:
        raise click.ClickException("--sass needs nvdisasm, which the sass extra installs: "
                                   "pip install 'ptxds[sass]'") from None


DRY_RUN_LISTED = 20
BUILD_FAILURES_LISTED = 5


def _print_plan(plan, jobs) -> None:
    import os
    # as the local pool: no more worker processes than items
    cores = max(1, min(jobs or os.cpu_count() or 1, len(plan.items)))
    for item in plan.items[:DRY_RUN_LISTED]:
        click.echo(f"{item.rows:>5} row(s)  {item.label}")
    if len(plan.items) > DRY_RUN_LISTED:
        click.echo(f"  ... and {len(plan.items) - DRY_RUN_LISTED} more work items")
    if not plan.items:
        click.echo(f"{plan.source}: nothing left to build ({plan.items_done} work items already done)")
        return
    minutes = plan.cpu_seconds / cores / 60
    click.echo(f"{plan.source}: {len(plan.items)} work items to build ({plan.items_done} already done), "
               f"{plan.rows} rows; about {minutes:.1f} min on {cores} core(s) with cold caches "
               f"({plan.cpu_seconds / max(plan.rows, 1):.1f} CPU-s per row, as measured on a 2-core machine)")


def _print_build_summary(summary) -> None:
    click.echo(f"\n{summary.source}: {summary.rows_written} rows written "
               f"({summary.items_skipped} of {summary.items_total} work items already done) "
               f"in {summary.seconds:.1f} s -> {summary.out_dir}")
    click.echo(f"executor: {summary.executor}")
    click.echo(f"{'arch':<10}{'rows':>8}")
    for arch, n in sorted(summary.by_arch.items()):
        click.echo(f"{arch:<10}{n:>8}")
    click.echo(f"{'status':<16}{'rows':>8}")
    for status, n in sorted(summary.by_status.items()):
        click.echo(f"{status:<16}{n:>8}")
    click.echo(f"groups touched: {len(summary.groups)}")
    if summary.build_failures:
        click.echo("why rows did not build (status_message; `ptxds info DIR` lists them again):")
        for message, n in summary.build_failures.most_common(BUILD_FAILURES_LISTED):
            click.echo(f"  {n:>5} x {message}")
        if len(summary.build_failures) > BUILD_FAILURES_LISTED:
            click.echo(f"  ... and {len(summary.build_failures) - BUILD_FAILURES_LISTED} other messages")
    for label, message in summary.failed_items:
        click.echo(f"failed item {label}: {message}", err=True)


@cli.command()
@click.argument("dataset", type=click.Path(exists=True, file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="print the counts as JSON")
@library_errors
def info(dataset, as_json):
    """Summarise a dataset folder: groups, members, sources, archs, statuses; after a verify,
    the numbers ptxds report plots (fastest members, spreads, failures, pairs, evidence).

    Example:

        ptxds info data/triton
    """
    from .pipeline import build_incomplete
    from .report import gather
    from .report.text import as_dict, format_text
    from dataset_spec.store.resplit import split_check
    report = gather(dataset)
    splits = split_check(dataset)
    incomplete = build_incomplete(dataset)
    if as_json:
        click.echo(json.dumps({**as_dict(report), "splits": splits, "incomplete": incomplete or None},
                              indent=2, sort_keys=True))
        return
    if incomplete:
        click.echo(f"INCOMPLETE: {incomplete}")
    click.echo(format_text(report))
    click.echo("splits (kernels): " + ", ".join(f"{k} {v}" for k, v in splits["kernels"].items())
               + f"; by shape: " + (", ".join(f"{k} {v}" for k, v in splits["kernels_by_shape"].items()) or "none")
               + f"; {splits['moved_by_hash']} row(s) moved to keep a PTX on one side")
    if splits["crossing_ptx_hashes"]:
        click.echo(f"LEAK: {splits['crossing_ptx_hashes']} ptx_hash value(s) in more than one split; "
                   f"run `ptxds resplit {dataset}` to rewrite the splits")
    else:
        click.echo("no ptx_hash is in more than one split")


@cli.command()
@click.argument("dataset", type=click.Path(exists=True, file_okay=False))
@silent_option
@library_errors
def resplit(dataset, silent):
    """Rewrite a dataset's split folders by function (no PTX on two sides), regenerate its
    pairs and write the by-shape configs, in place and atomically; no row is lost.

    Example:

        ptxds resplit data/triton-verified
    """
    from dataset_spec.store.dataset import Dataset
    summary = Dataset.open(dataset, credits=source_credits).publish(progress=not silent, canonical=True)
    click.echo(f"{dataset}: {summary.rows} rows, {summary.moved} moved "
               f"({summary.crossing_before} ptx_hash value(s) crossed splits before, 0 now; "
               f"{summary.moved_by_hash} row(s) off their function's split to keep a PTX on one side)")
    click.echo("kernels: " + ", ".join(f"{k} {v}" for k, v in summary.by_split.items())
               + "; kernels_by_shape: " + ", ".join(f"{k} {v}" for k, v in summary.by_shape.items()))
    click.echo(f"pairs: {summary.pairs}; pairs_by_shape: {summary.pairs_by_shape}")


@cli.command()
@click.argument("datasets", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="the merged dataset folder (new, or a dataset to add the rows to)")
@silent_option
@library_errors
def merge(datasets, out_dir, silent):
    """Merge datasets of several sources into one: every member of one function (its
    canonical problem: op, dtypes, layouts, size, epilogue) joins one group
    function/<op>/..., whatever its source; rows are unverified again (verify the merged
    folder), and keep their source's problem in provenance.

    Example:

        ptxds merge data/triton data/cutlass data/tvm --out data/crossource
    """
    from .merge import merge_datasets
    summary = merge_datasets(list(datasets), out_dir, credits=source_credits, progress=not silent)
    cross = summary.cross_source_groups
    click.echo(f"{out_dir}: {summary.rows} rows written ({summary.moved} into canonical groups, "
               f"{summary.duplicates} duplicates (build key or kernel id) skipped); {len(summary.groups)} canonical groups, "
               f"{len(cross)} with members from more than one source")
    for group, sources in sorted(cross.items()):
        click.echo(f"  {group}: " + ", ".join(f"{s} {n}" for s, n in sorted(sources.items())))


@cli.command("show-witness")
@click.argument("dataset", type=click.Path(exists=True, file_okay=False))
@click.argument("which")
@library_errors
def show_witness(dataset, which):
    """Regenerate a verified negative's inputs from its seed (no GPU), recompute the
    reference at the element it differs and print it beside the stored values. WHICH is a
    kernel_id (or build_key) of a wrong member, or a pair as KERNEL_A:KERNEL_B.

    Example:

        ptxds show-witness data/triton-verified 3f1c0a9e2b7d5c4a8e6f0b1d
    """
    from dataset_spec.store.shards import read_pairs, read_records
    from verify.trials.witness import regenerate
    records = read_records(dataset)
    by_id = {r.kernel_id: r for r in records}
    by_id.update({r.build_key: r for r in records})
    witness = None
    if ":" in which:
        a, b = which.split(":", 1)
        pair = next((p for p in read_pairs(dataset) if {p.kernel_a, p.kernel_b} == {a, b}), None)
        if pair is None:
            raise click.ClickException(f"no pair {which} in {dataset}; give kernel ids as KERNEL_A:KERNEL_B")
        if not pair.witness:
            raise click.ClickException(f"pair {which} is {pair.label_source} with equivalent={pair.equivalent}: "
                                       "only verified negatives carry a witness")
        witness = pair.witness
        which = witness.get("kernel_id") or b
    record = by_id.get(which)
    if record is None:
        raise click.ClickException(f"no row with kernel_id or build_key {which} in {dataset}; "
                                   f"`ptxds info {dataset}` lists its groups and failures")
    version = _schema_version_of(dataset, record.build_key)
    if witness is None and version < SCHEMA_VERSION_WITH_WITNESS:
        raise click.ClickException(f"row {which} was written in schema version {version}, which has no witness "
                                   f"column (added in version {SCHEMA_VERSION_WITH_WITNESS}); verify the dataset "
                                   f"again (ptxds verify {dataset} --out NEW) to record witnesses")
    result = regenerate(record, witness)
    click.echo("\n".join(result.lines()))


SCHEMA_VERSION_WITH_WITNESS = 4  # the version that added trial_errors and witness


def _schema_version_of(dataset, build_key: str) -> int:
    """The schema version the row with ``build_key`` was last written in."""
    from dataset_spec.store.shards import latest_rows, read_table
    rows = latest_rows(read_table(dataset, "kernels", columns=["build_key", "schema_version"]).to_pylist())
    return next((r["schema_version"] or 0 for r in rows if r["build_key"] == build_key), 0)


@cli.command()
@click.argument("dataset", type=click.Path(exists=True, file_okay=False))
@click.option("--out", "out_dir", default=None, type=click.Path(file_okay=False),
              help="folder for index.html (default: DATASET/report)")
@click.option("--knob", "knobs", multiple=True, help="plot time against this knob: tile, stages, warps, "
              "schedule (repeatable; default: every one the dataset has)")
@click.option("--max-groups", type=click.IntRange(min=1), default=None, help="plot at most N groups' members (default 60; "
              "every group stays in the tables)")
@click.option("--no-card", is_flag=True, help="leave DATASET/plots and the dataset card alone")
@library_errors
def report(dataset, out_dir, knobs, max_groups, no_card):
    """Write one static HTML page of a dataset (plots embedded, no server, no network) and
    the same plots as PNG files beside the dataset card.

    Example:

        ptxds report data/triton-verified --out data/triton-verified/report
    """
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise click.ClickException("ptxds report draws with matplotlib; install it: pip install 'ptxds[report]'") from None
    from .report import DEFAULT_MAX_GROUPS, KNOBS, build_report
    result = build_report(dataset, out_dir, knobs=knobs or KNOBS,
                          max_groups=DEFAULT_MAX_GROUPS if max_groups is None else max_groups, card=not no_card)
    click.echo(f"{result.page} ({result.groups_plotted} of {result.groups} groups plotted)")
    if result.card_plots:
        click.echo(f"{len(result.card_plots)} plots for the dataset card in {result.card_plots[0].parent}")


@cli.command()
@click.argument("dataset", type=click.Path(exists=True, file_okay=False))
@click.option("--rewrites", type=click.IntRange(min=0), default=2, show_default=True,
              help="rewritten (semantics-preserving) members to add per group")
@click.option("--mutants", type=click.IntRange(min=0), default=4, show_default=True,
              help="mutants (one semantic change each) to add per group")
@click.option("--seed", type=int, default=0, show_default=True, help="picks operators and sites")
@silent_option
@library_errors
def rewrite(dataset, rewrites, mutants, seed, silent):
    """Add rewritten members and mutants to every group; ptxds verify labels them.

    Example:

        ptxds rewrite data/triton --rewrites 2 --mutants 4 --seed 0
    """
    from .rewrite import rewrite_dataset
    summary = rewrite_dataset(dataset, rewrites=rewrites, mutants=mutants, seed=seed, progress=not silent)
    click.echo(f"{dataset}: {summary.rewrites_written} rewritten members and {summary.mutants_written} "
               f"mutants added to {summary.groups} groups ({summary.already_present} already present)")
    for name, n in sorted(summary.by_operator.items()):
        click.echo(f"  {name:<24}{n:>6}")
    rejected = sum(summary.mutants_rejected.values())
    if rejected:
        click.echo(f"mutants rejected by ptxas (discarded): {rejected} "
                   + ", ".join(f"{k} {v}" for k, v in sorted(summary.mutants_rejected.items())))
    if summary.mutants_equivalent:
        click.echo("mutants the PTX proves equivalent (left out, another site drawn): "
                   + ", ".join(f"{k} {v}" for k, v in sorted(summary.mutants_equivalent.items())))
    if summary.barriers_excluded:
        click.echo("barriers no drop_barrier may take, summed over its mutants (their trace lists them): "
                   + ", ".join(f"{k} {v}" for k, v in sorted(summary.barriers_excluded.items())))
    for name, operators, message in summary.rewrite_failures:
        click.echo(f"rewrite failed to assemble (engine bug) {name} {'+'.join(operators)}: {message}", err=True)


@cli.command()
@click.argument("dataset", type=click.Path(exists=True, file_okay=False))
@click.option("--out", "out_dir", default=None, type=click.Path(file_okay=False),
              help="output folder (default: DATASET-verified)")
@click.option("--groups", "groups", default=None, help="only groups matching this glob")
@click.option("--trials", type=click.IntRange(min=1), default=None,
              help="trials per group (default: one per trial kind: normal, uniform, wide, edge, stress)")
@click.option("--no-timing", is_flag=True, help="check equivalence only")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="GPU workers: processes, or Ray actors (default: one per GPU; more share a GPU, "
                   "taking turns there while timing is on)")
@click.option("--kernel-timeout", type=click.FloatRange(min=0, min_open=True), default=20.0, show_default=True,
              help="seconds before a member counts as hung")
@click.option("--reference", type=click.Choice(["auto", "numpy", "torch"]), default="auto", show_default=True,
              help="where float64 references and per-element checks run (auto: torch on the GPU for large "
                   "GEMM references and outputs of 1M+ elements, when installed)")
@click.option("--sanitize", is_flag=True,
              help="also run every member under compute-sanitizer (memcheck, racecheck); slow")
@click.option("--trial-salt", default=None, metavar="TEXT",
              help="mixed into every trial's seed and recorded with the rows (default: a fresh random salt "
                   "per run, so no kernel knows its inputs in advance; give a run's salt to repeat it, '' for "
                   "seeds from the group alone)")
@click.option("--no-racecheck", is_flag=True, help="skip the racecheck every passing member that uses shared "
              "memory gets by default (once, on its first trial, where compute-sanitizer is installed)")
@click.option("--inputs", type=click.Choice(["auto", "host"]), default="auto", show_default=True,
              help="who draws trial inputs (auto: large GEMM/vector_add/square groups on the GPU with a "
                   "counter-based generator, recorded per row; host: numpy's generator for every group)")
@click.option("--no-split", is_flag=True, help="several GPUs: each group whole on one GPU (default: a group's "
              "members spread over the GPUs in chunks pulled from one queue)")
@click.option("--costs-from", type=click.Path(exists=True, file_okay=False), default=None,
              help="a verified dataset whose measured seconds per row schedule the GPUs (default: estimates)")
@executor_options
@silent_option
@library_errors
def verify(dataset, out_dir, groups, trials, no_timing, workers, kernel_timeout, reference, sanitize, trial_salt,
           no_racecheck, inputs, no_split, costs_from, executor, address, silent):
    """Run every group on the GPU, check equivalence, time every member; writes new shards.

    Example:

        ptxds verify data/triton --out data/triton-verified

        ptxds verify data/cutlass --out data/cutlass-verified --executor ray --address auto
    """
    from dataset_spec.store.dataset import Dataset
    from verify.options import VerifyOptions
    from .verification import verify_and_publish
    out_dir = out_dir or str(Path(dataset).resolve()) + "-verified"
    if Path(out_dir).resolve() == Path(dataset).resolve():
        raise click.UsageError("--out must differ from DATASET: the input is never changed in place")
    Dataset.open(dataset)
    options = VerifyOptions(groups=groups, trials=trials, timing=not no_timing, workers=workers,
                            kernel_timeout=kernel_timeout, reference=reference, sanitize=sanitize, inputs=inputs,
                            split=not no_split, costs_from=costs_from, racecheck=not no_racecheck,
                            trial_salt=secrets.token_hex(8) if trial_salt is None else trial_salt)
    runner = _executor(executor, address)
    try:
        with _sigterm_interrupts():  # a stopped verify keeps its groups and says where its time went
            summary = verify_and_publish(dataset, out_dir, options, runner, progress=not silent)
    finally:
        runner.close()
    if not summary.groups and not summary.skipped_groups:
        selection = f"matches --groups {groups!r}" if groups else "is in it"
        raise click.ClickException(f"no group of {dataset} {selection}; `ptxds info {dataset}` lists its groups")
    click.echo(summary.format())


@cli.command()
@click.argument("dataset", type=click.Path(exists=True, file_okay=False))
@click.option("--group", "group", required=True, help="the group the PTX joins (its group_id)")
@click.option("--ptx", "ptx_file", required=True, type=click.Path(exists=True, dir_okay=False),
              help="the hand-edited PTX file (its .target names the arch)")
@click.option("--launch", "launch_file", default=None, type=click.Path(exists=True, dir_okay=False),
              help="JSON/YAML launch fields replacing the base member's (e.g. dynamic_smem, block)")
@click.option("--name", default=None, help="the member's name (default: the PTX file's stem)")
@silent_option
@library_errors
def add(dataset, group, ptx_file, launch_file, name, silent):
    """Add a hand-edited PTX to an existing group; it inherits the group's problem and launch.

    The row is assembled before anything is written: bad input changes nothing in DATASET.

    Example:

        ptxds add data/handhack --group handhack/smith_waterman/int32/P1024xM128xN128 --ptx my.ptx
    """
    from .add import add_member
    record = add_member(dataset, group, ptx_file, launch_file, name, progress=not silent)
    resources = ", ".join(f"{r.entry}: {r.registers} registers" for r in record.resources)
    click.echo(f"added {record.name} ({record.arch}, kernel_id {record.kernel_id}) to {group}; {resources}")
    click.echo(f"base member: {record.provenance['base_name']} ({record.provenance['base_kernel_id']}); "
               f"run ptxds verify {dataset} to label it")


@cli.command()
@click.option("--source", "source", required=True, type=click.Choice(["inductor"]), help="what to capture")
@click.option("--models", required=True, help="comma-separated models: model or model:dtype:batch:seq[:backward] "
              "(llama, gpt2, bert, resnet50, unet, ..., gpt2_block, llama_layer), or library for the "
              "dataset's 56 graphs (docs/inductor.md)")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="capture folder")
@click.option("--target", type=click.Choice(["h100", "a100"]), default="h100", show_default=True,
              help="the GPU whose kernels Inductor writes (no GPU is needed)")
@library_errors
def capture(source, models, out_dir, target):
    """Write the Triton kernels Inductor generates for models, with their references, to a folder.

    Example:

        ptxds capture --source inductor --models gpt2_block,llama_layer:bfloat16 --out cap

        ptxds build --source inductor --captured cap --out data/inductor
    """
    from builders.inductor.capture import capture_models
    for summary in capture_models(models, out_dir, target):
        click.echo(f"{summary['model']}: {len(summary['kernels'])} kernels, {len(summary['skipped'])} left out "
                   f"({summary['seconds']} s)")
        for kernel, reason in summary["skipped"].items():
            click.echo(f"  left out {kernel}: {reason}")


def command_host():
    """What a source's own commands get from the CLI (builders/commands.py)."""
    from builders.commands import CommandHost

    def build(source, out_dir, options, jobs: int = 0, progress: bool = True):
        from .pipeline import run_build
        return run_build(source, out_dir, options, jobs=jobs, progress=progress)

    def verify(in_dir, out_dir, progress: bool = True, **settings):
        from verify.options import VerifyOptions
        from .verification import verify_and_publish
        return verify_and_publish(in_dir, out_dir, VerifyOptions(**settings), progress=progress)

    def require_gpu():
        from verify.device.driver import init
        init()

    return CommandHost(build=build, verify=verify, require_gpu=require_gpu, errors=library_errors,
                       silent_option=silent_option, parse_archs=_parse_archs, print_build_summary=_print_build_summary)


def add_source_commands(group, classes: dict) -> None:
    """Each source's own commands (``Builder.commands``) beside the built-in ones; a name
    that is taken already is a programming error, found at import."""
    from builders import import_builder
    host = command_host()
    for source, cls in classes.items():
        for path in cls.commands:
            command = import_builder(source, path)(host)
            if command.name in group.commands:
                raise RuntimeError(f"source {source} brings a command {command.name!r}, which ptxds has already")
            group.add_command(command)


add_source_commands(cli, SOURCE_CLASSES)


def main():
    cli()
