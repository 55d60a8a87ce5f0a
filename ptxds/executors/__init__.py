"""Where build and verify work runs: ``local`` (a process pool on this machine, one GPU
worker process per local GPU) or ``ray`` (Ray tasks on a cluster's CPUs, one Ray actor
per GPU).

The interface is small on purpose. An executor does two things: it runs build work items
and hands back each item's rows (``run_items``), and it starts GPU workers for verify
(``gpu_workers``). Everything that makes a run safe -- skipping work already done,
writing each ``build_key`` once, atomic part files, the card -- lives in the driver
(``pipeline.run_build``, ``verify.runner``), so every executor gets the same guarantees
and a run started with one executor resumes with another.
"""
from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from dataset_spec.errors import PtxdsError
from builders import import_builder
from builders.base import BuildOptions, WorkItem
from ptx_tools.ptx_cache import CACHE_ROOT_ENV

from ..finalize import finalize_record

EXECUTORS = ("local", "ray")


class ExecutorUnavailable(PtxdsError, RuntimeError):
    """The chosen executor cannot run here (package missing, cluster unreachable)."""


@dataclass(frozen=True)
class BuildTask:
    """What every work item of one build shares; sent to each worker once."""
    source: str                      # the registry name (for messages)
    builder: str                     # "module:Class", resolved from the registry by the driver
    options: BuildOptions
    sass: bool = False
    cache_dir: Optional[str] = None  # shared compile cache folder (``--cache``)
    memory_bytes: int = 0            # scheduling hint per item (heavy CUTLASS translation units)


@dataclass
class ItemOutcome:
    """One work item's rows, or why it failed (its rows are then not written)."""
    item: WorkItem
    records: list
    error: str = ""


def cache_environment(cache_dir: Optional[str]) -> dict:
    """Environment that points the content-keyed compile caches into ``cache_dir``."""
    if not cache_dir:
        return {}
    # Triton reads its own variable; every ptxds cache lives under PTXDS_CACHE
    return {"TRITON_CACHE_DIR": str(Path(cache_dir) / "triton"), CACHE_ROOT_ENV: str(cache_dir)}


_BUILDERS: dict = {}


def _builder_for(task: BuildTask):
    """One builder per task per worker process (builders keep catalogs and caches)."""
    key = repr((task.builder, task.options))
    if key not in _BUILDERS:
        _BUILDERS[key] = import_builder(task.source, task.builder)(task.options)
    return _BUILDERS[key]


def build_and_finalize(builder, item: WorkItem, sass: bool) -> list:
    """``builder``'s rows for ``item``, keyed and finalised (assembled, hashed)."""
    records = builder.build(item)
    for i, record in enumerate(records):
        record.build_key = item.key if len(records) == 1 else f"{item.key}#{i}"
        record.provenance.setdefault("work_item", item.key)
        finalize_record(record, sass=sass)
    return records


@contextlib.contextmanager
def compile_caches(cache_dir: Optional[str]):
    """The compilers read their cache folder from the environment: point it at
    ``cache_dir`` for one item, then put back what was there (a worker process, or the
    driver itself with one job, serves builds with other caches too)."""
    wanted = cache_environment(cache_dir)
    saved = {name: os.environ.get(name) for name in wanted}
    os.environ.update(wanted)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def build_item(task: BuildTask, item: WorkItem) -> list:
    """Worker side: build one item of ``task``."""
    with compile_caches(task.cache_dir):
        return build_and_finalize(_builder_for(task), item, task.sass)


def make_executor(name: str, address: Optional[str] = None, jobs: int = 0):
    """The executor called ``name``; ``address`` is a Ray cluster's (``ray`` only)."""
    if name not in EXECUTORS:
        raise ExecutorUnavailable(f"unknown executor {name!r}; use one of {', '.join(EXECUTORS)}")
    if name == "local":
        if address:
            raise ExecutorUnavailable("--address names a Ray cluster; add --executor ray")
        from .local import LocalExecutor
        return LocalExecutor(jobs)
    from .ray_cluster import RayExecutor
    return RayExecutor(address)
