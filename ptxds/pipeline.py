"""The build pipeline: builder work items -> worker processes (compile + finalise) ->
crash-safe shards -> dataset card. Resumable: work items whose rows are already in the
output folder are skipped, and rows land only as whole, fsynced part files."""
from __future__ import annotations

import concurrent.futures as cf
import os
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from builders import load_builder
from builders.base import BuildOptions, WorkItem
from dataset_spec.card import write_card
from dataset_spec.shards import ShardWriter, done_keys, remove_stale_temp_files
from ptx_tools import find_tool

from .finalize import finalize_record

FLUSH_ROWS = 64
FLUSH_SECONDS = 15.0


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
    groups: set = field(default_factory=set)
    failed_items: list = field(default_factory=list)
    seconds: float = 0.0
    interrupted: bool = False


def select_items(items: list, limit, sample_seed: int) -> list:
    """The first ``limit`` items, or with a non-zero seed a deterministic random sample
    kept in the builder's order."""
    if not limit or limit >= len(items):
        return items
    if not sample_seed:
        return items[:limit]
    chosen = set(random.Random(sample_seed).sample(range(len(items)), limit))
    return [item for i, item in enumerate(items) if i in chosen]


def item_of_key(build_key: str) -> str:
    return build_key.split("#", 1)[0]


_WORKER_BUILDER = None


def _init_worker(source: str, options: BuildOptions) -> None:
    global _WORKER_BUILDER
    _WORKER_BUILDER = load_builder(source)(options)


def build_and_finalize(builder, item: WorkItem, sass: bool) -> list:
    records = builder.build(item)
    for i, record in enumerate(records):
        record.build_key = item.key if len(records) == 1 else f"{item.key}#{i}"
        record.provenance.setdefault("work_item", item.key)
        finalize_record(record, sass=sass)
    return records


def _run_item(item: WorkItem, sass: bool) -> list:
    return build_and_finalize(_WORKER_BUILDER, item, sass)


def run_build(source: str, out_dir, options: BuildOptions, jobs: int = 0, sass: bool = False,
              progress: bool = True, flush_rows: int = FLUSH_ROWS) -> BuildSummary:
    """Build ``source`` into ``out_dir`` and (re)write its card. Safe to rerun."""
    start = time.time()
    find_tool("ptxas")  # a missing toolchain is one clear error before any work
    builder_cls = load_builder(source)
    builder = builder_cls(options)
    items = select_items(builder.work_items(), options.limit, options.sample_seed)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    remove_stale_temp_files(out)
    finished = {item_of_key(k) for k in done_keys(out)}
    todo = [item for item in items if item.key not in finished]
    summary = BuildSummary(source, str(out), items_total=len(items),
                           items_skipped=len(items) - len(todo))
    writer = ShardWriter(out, "kernels")
    pending: list = []
    last_flush = time.time()

    def flush():
        nonlocal pending, last_flush
        if pending:
            summary.rows_written += writer.write(pending)
            pending = []
        last_flush = time.time()

    def take(records):
        for record in records:
            summary.by_status[record.status] += 1
            summary.by_arch[record.arch] += 1
            summary.groups.add(record.group_id)
        pending.extend(records)
        if len(pending) >= flush_rows or time.time() - last_flush > FLUSH_SECONDS:
            flush()

    bar = _progress_bar(len(todo), source, progress)
    jobs = jobs or os.cpu_count() or 1
    try:
        if jobs == 1:
            for item in todo:
                take(_safe_build(builder, item, sass, summary))
                bar.update(1)
        else:
            _run_pool(source, options, todo, jobs, sass, take, bar, summary)
    except KeyboardInterrupt:
        summary.interrupted = True
    finally:
        flush()
        bar.close()
    write_card(out)
    summary.seconds = time.time() - start
    return summary


def _safe_build(builder, item, sass, summary) -> list:
    try:
        return build_and_finalize(builder, item, sass)
    except Exception as exc:  # a builder bug costs one item, and is reported
        summary.failed_items.append((item.label, f"{type(exc).__name__}: {exc}"))
        return []


def _run_pool(source, options, todo, jobs, sass, take, bar, summary) -> None:
    with cf.ProcessPoolExecutor(jobs, initializer=_init_worker, initargs=(source, options)) as pool:
        futures = {pool.submit(_run_item, item, sass): item for item in todo}
        try:
            for future in cf.as_completed(futures):
                item = futures[future]
                try:
                    take(future.result())
                except Exception as exc:
                    summary.failed_items.append((item.label, f"{type(exc).__name__}: {exc}"))
                bar.update(1)
        except KeyboardInterrupt:
            for future in futures:
                future.cancel()
            raise


def _progress_bar(total: int, label: str, enabled: bool):
    from tqdm import tqdm
    return tqdm(total=total, desc=f"build {label}", unit="kernel", disable=not enabled)
