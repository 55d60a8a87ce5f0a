"""The build pipeline: builder work items -> an executor's workers (compile + finalise;
local processes or Ray tasks) -> crash-safe shards written by this driver alone -> dataset
card. Resumable: work items whose rows are already in the output folder are skipped, and
rows land only as whole, fsynced part files. A folder being built holds ``BUILDING`` until
the card is written, so ``ptxds info`` can say a build stopped before its end."""
from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from builders import BUILDERS, EXTRA_OF_PACKAGE, MissingSourceDependency, load_builder, source_credits
from builders.base import BuildOptions, WorkItem
from dataset_spec.store.card import check_card_replaceable
from dataset_spec.store.dataset import Dataset
from dataset_spec.errors import PtxdsError
from dataset_spec.model import SpecError
from dataset_spec.store.shards import remove_stale_temp_files
from ptx_tools import find_tool

from .executors import BuildTask, build_and_finalize  # noqa: F401 (tests build one item)
from .executors.local import LocalExecutor
from .finalize import failure_line

FLUSH_ROWS = 64
FLUSH_SECONDS = 15.0
# Lines a command shows with its progress bar (unless --silent; ptxds.cli shows them).
PROGRESS = logging.getLogger("ptxds.progress")
# A first work item estimated at least this long gets a line saying the bar stands still
# until it is done (a CUTLASS nvcc batch, a TVM schedule search): rows arrive item by item.
SLOW_ITEM_CPU_SECONDS = 8.0
# Present in a dataset folder from a build's start until its card is written.
BUILDING = ".ptxds-building"


class OutputFolderError(PtxdsError, OSError):
    """The --out folder cannot take a dataset (not writable, not a folder)."""


def check_out_dir(out: Path) -> None:
    """Before any work: the folder can be made and written, and holds no README.md that a
    card would replace (``card.check_card_replaceable``)."""
    if out.exists() and not out.is_dir():
        raise OutputFolderError(f"--out {out} is a file; give a folder")
    check_card_replaceable(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".ptxds-write-test-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise OutputFolderError(f"cannot write to --out {out}: {exc.strerror or exc}; "
                                "give a folder you can write") from None


def build_incomplete(root) -> str:
    """What ``ptxds info`` says of a folder whose build has not finished ('' when none)."""
    path = Path(root) / BUILDING
    if not path.exists():
        return ""
    try:
        started = json.loads(path.read_text()).get("command", "ptxds build")
    except (OSError, ValueError):
        started = "ptxds build"
    return (f"a build into this folder did not finish (or is still running): run `{started}` again to resume; "
            "until it ends the card may be missing or stale, and load_dataset may not see every config")


@dataclass
class BuildSummary:
    """What one ``ptxds build`` did."""
    source: str
    out_dir: str
    items_total: int = 0
    items_skipped: int = 0
    rows_written: int = 0
    by_status: Counter = field(default_factory=Counter)
    by_arch: Counter = field(default_factory=Counter)
    build_failures: Counter = field(default_factory=Counter)  # status_message -> build_failed rows
    groups: set = field(default_factory=set)
    failed_items: list = field(default_factory=list)
    seconds: float = 0.0
    interrupted: bool = False
    executor: str = ""


def select_items(items: list, limit, sample_seed: int) -> list:
    """Whole items whose rows fit in ``limit`` rows: taken in the builder's order, or with a
    non-zero seed in a deterministic random order (and kept in the builder's order); the
    first item taken is always kept, so a limit below one item's rows builds that item."""
    if limit is None:
        return items
    if limit < 1:
        raise ValueError(f"limit must be >= 1 row, got {limit}")
    order = list(range(len(items)))
    if sample_seed and all(item.rows == 1 for item in items):
        # the draw every one-row-per-item build has always made
        order = random.Random(sample_seed).sample(order, min(limit, len(order)))
    elif sample_seed:
        random.Random(sample_seed).shuffle(order)
    chosen, rows = set(), 0
    for index in order:
        if chosen and rows + items[index].rows > limit:
            break
        chosen.add(index)
        rows += items[index].rows
    return [item for i, item in enumerate(items) if i in chosen]


def item_of_key(build_key: str) -> str:
    return build_key.split("#", 1)[0]


@dataclass
class BuildPlan:
    """What ``run_build`` would do, without doing it (``ptxds build --dry-run``)."""
    source: str
    items: list          # work items still to build
    items_done: int      # work items whose rows are already in the output folder
    rows: int            # rows the items still to build will give
    cpu_seconds: float   # estimated from the source's measured rates (Builder.cpu_seconds)


def selected_items(source: str, builder, options: BuildOptions) -> list:
    """The builder's work items under ``--limit``/``--sample-seed``; an empty selection is an
    error before anything is written."""
    try:
        work = builder.work_items()
    except ModuleNotFoundError as exc:  # a source that imports its optional package on use
        package = (exc.name or "").split(".")[0]
        if not package or package in ("builders", "dataset_spec", "ptx_tools", "verify", "ptxds"):
            raise
        raise MissingSourceDependency(f"source {source!r} needs the Python package {package!r}; install it with "
                                      f"pip install 'ptxds[{EXTRA_OF_PACKAGE.get(package, source)}]'") from None
    items = select_items(work, options.limit, options.sample_seed)
    if not items:
        raise SpecError(f"--source {source} selects no work item with these options (archs "
                        f"{', '.join(options.archs)}); nothing was written")
    return items


def plan_build(source: str, out_dir, options: BuildOptions) -> BuildPlan:
    """The work items a build would run and an estimate of their cost; writes nothing."""
    builder_cls = load_builder(source)
    builder = builder_cls(options)
    items = selected_items(source, builder, options)
    out = Path(out_dir)
    finished = {item_of_key(k) for k in Dataset(out).done_keys()}
    todo = [item for item in items if item.key not in finished]
    rows = sum(item.rows for item in todo)
    return BuildPlan(source, todo, len(items) - len(todo), rows, sum(builder.cpu_seconds(item) for item in todo))


def run_build(source: str, out_dir, options: BuildOptions, jobs: int = 0, sass: bool = False,
              progress: bool = True, flush_rows: int = FLUSH_ROWS, executor=None,
              cache_dir=None, command: str = "") -> BuildSummary:
    """Build ``source`` into ``out_dir`` and (re)write its card. Safe to rerun, with any
    executor: items whose rows are on disk are skipped, and a row whose ``build_key`` is
    already written (a retried task's duplicate) is dropped here, so no row lands twice; a
    row whose ``build_key`` another item of this run made is a builder bug, reported as a
    failed item. ``executor``: from ``executors.make_executor`` (default: local with ``jobs``
    processes). ``cache_dir``: a compile cache folder every worker shares. ``command``: the
    command line a stopped build is resumed with (what ``ptxds info`` tells)."""
    start = time.time()
    find_tool("ptxas")  # a missing toolchain is one clear error before any work
    check_card_replaceable(Path(out_dir))  # before the builder's own work (a TVM search takes a minute)
    builder_cls = load_builder(source)
    builder = builder_cls(options)
    items = selected_items(source, builder, options)
    out = Path(out_dir)
    builder.check_output(out)  # e.g. one problem per group across builds into one folder
    made = not out.exists()
    check_out_dir(out)
    remove_stale_temp_files(out)
    marker = out / BUILDING
    # a finished build's folder: its card describes its rows, so a run that adds none
    # leaves it as it is (publishing reads every part again: seconds on a large folder)
    published = (out / "README.md").exists() and not marker.exists()
    marker.write_text(json.dumps({"command": command or f"ptxds build --source {source} --out {out_dir}",
                                  "pid": os.getpid(), "started": time.time()}))
    written = Dataset(out).done_keys()
    finished = {item_of_key(k) for k in written}
    todo = [item for item in items if item.key not in finished]
    builder.plan_batches(todo)
    summary = BuildSummary(source, str(out), items_total=len(items),
                           items_skipped=len(items) - len(todo))
    task = BuildTask(source, BUILDERS[source], options, sass, str(Path(cache_dir).resolve()) if cache_dir else None,
                     builder_cls.task_memory_bytes)
    executor = executor or LocalExecutor(jobs)
    summary.executor = executor.describe()
    writer = Dataset(out).writer()
    pending: list = []
    last_flush = time.time()

    def flush():
        nonlocal pending, last_flush
        if pending:
            summary.rows_written += writer.write(pending)
            pending = []
        last_flush = time.time()

    made_by: dict = {}  # build_key -> the item that made it, for rows taken in this run

    def take(item, records):
        fresh = []
        for record in records:
            first = made_by.setdefault(record.build_key, item.key)
            if first != item.key:  # not a retried task's copy: two items claim one row
                summary.failed_items.append((item.label, (
                    f"row {record.name!r} of group {record.group_id} has the build_key of a row item {first!r} "
                    "already made (same source, group, variant, arch and name); the first row is kept, "
                    "so the builder must give these items distinct variants")))
            elif record.build_key not in written:
                fresh.append(record)
        written.update(r.build_key for r in fresh)
        for record in fresh:
            summary.by_status[record.status] += 1
            summary.by_arch[record.arch] += 1
            if record.status == "build_failed":
                summary.build_failures[_short(failure_line(record.status_message or "no message"))] += 1
            summary.groups.add(record.group_id)
        pending.extend(fresh)
        if len(pending) >= flush_rows or time.time() - last_flush > FLUSH_SECONDS:
            flush()

    if progress:
        _announce_slow_items(source, builder, todo, executor)
    bar = _progress_bar(sum(item.rows for item in todo), source, progress)
    try:
        with contextlib.closing(executor.run_items(task, todo)) as outcomes:
            for outcome in outcomes:
                if outcome.error:
                    summary.failed_items.append((outcome.item.label, outcome.error))
                take(outcome.item, outcome.records)
                bar.update(outcome.item.rows)
    except KeyboardInterrupt:
        summary.interrupted = True
    finally:
        flush()
        writer.close()  # the publish below takes the folder's lock itself
        bar.close()
    summary.executor = executor.describe()  # again: a local pool starts no more workers than items
    if (summary.rows_written or not published) and Dataset(out).done_keys():
        Dataset(out, credits=source_credits).publish(progress)
    # else nothing new in a published folder, or no row at all (every item failed): no card
    # for an empty dataset
    if not summary.interrupted:
        marker.unlink(missing_ok=True)
    if made and not any(out.iterdir()):
        out.rmdir()  # this build made the folder and left nothing in it
    summary.seconds = time.time() - start
    return summary


SUMMARY_MESSAGE_CHARS = 240


def _short(text: str) -> str:
    """A message cut to one terminal-friendly line (the row keeps the whole of it)."""
    return text if len(text) <= SUMMARY_MESSAGE_CHARS else text[:SUMMARY_MESSAGE_CHARS - 3] + "..."


def _announce_slow_items(source: str, builder, todo: list, executor) -> None:
    """One line before the bar when the first work items take long: the bar counts rows
    as whole items finish, so it stands still that long."""
    first = todo[:max(1, getattr(executor, "jobs", 1) or 1)]
    seconds = max((builder.cpu_seconds(item) for item in first), default=0.0)
    if seconds < SLOW_ITEM_CPU_SECONDS:
        return
    PROGRESS.info("build %s: the bar moves a work item at a time (%d items, %d rows); the first take about "
                  "%.0f CPU-s each with cold caches, longer on a busy machine", source, len(todo),
                  sum(item.rows for item in todo), seconds)


def _progress_bar(total: int, label: str, enabled: bool):
    from tqdm import tqdm
    return tqdm(total=total, desc=f"build {label}", unit="row", disable=not enabled)
