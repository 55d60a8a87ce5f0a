"""The local executor: a process pool on this machine for build work items, and one GPU
worker process per local GPU for verify. The embedded default.

The build pool isolates items from each other: the compilers run in the workers, and one
that crashes (a segfault in a code generator) or hangs costs its own item only. A dead
worker fails just the item it was building and is replaced; an item that runs past the
item timeout has its worker stopped. Workers are started with ``spawn``: the driver holds
threads (the progress bar's monitor), which ``fork`` would copy half-way through."""
from __future__ import annotations

import concurrent.futures as cf
import multiprocessing as mp
import os
import signal
from typing import Iterator, Optional

from dataset_spec.errors import PtxdsError

from . import BuildTask, ItemOutcome, build_item

ITEM_TIMEOUT_ENV = "PTXDS_ITEM_TIMEOUT"
# Seconds one work item may take in a pool worker; the heaviest CUTLASS translation units
# take minutes on two cores, so this only catches a compiler that never returns.
DEFAULT_ITEM_TIMEOUT = 3600.0

_WORKER_TASK: Optional[BuildTask] = None


def _init_worker(task: BuildTask, parent_pid: int) -> None:
    global _WORKER_TASK
    from ptx_tools.toolchain import die_with_parent
    die_with_parent(parent_pid)  # a killed build leaves no worker behind
    _WORKER_TASK = task


def _run_item(item):
    return build_item(_WORKER_TASK, item)


def _failure(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def item_timeout_from_env() -> Optional[float]:
    """The item timeout in seconds: ``PTXDS_ITEM_TIMEOUT`` (0: none), else the default."""
    text = os.environ.get(ITEM_TIMEOUT_ENV, "").strip()
    if not text:
        return DEFAULT_ITEM_TIMEOUT
    try:
        seconds = float(text)
    except ValueError:
        raise PtxdsError(f"{ITEM_TIMEOUT_ENV}={text!r} is not a number of seconds; "
                         f"set it to e.g. 3600, or 0 for no limit") from None
    return seconds if seconds > 0 else None


def _died(exc: BaseException) -> str:
    """Why a worker process ended without an answer, for the item's failure message."""
    code = getattr(exc, "exitcode", None)
    how = f"exit code {code}"
    if isinstance(code, int) and code < 0:
        try:
            how = signal.Signals(-code).name
        except ValueError:
            how = f"signal {-code}"
    return (f"WorkerDied: the build worker process died ({how}) while building this item, "
            f"most likely a compiler crash; the other items are unaffected, rerun the build to retry it")


class LocalExecutor:
    """``jobs`` worker processes at most, and no more than a run has items (0: one per core;
    1: in this process). ``item_timeout``: seconds per item in a worker (None:
    ``PTXDS_ITEM_TIMEOUT`` or one hour; 0: no limit); with one job the item runs in this
    process, unguarded."""
    name = "local"

    def __init__(self, jobs: int = 0, item_timeout: Optional[float] = None):
        self.jobs = jobs or os.cpu_count() or 1
        self.started = None  # worker processes the last run started (None: no run yet)
        self.item_timeout = item_timeout_from_env() if item_timeout is None else (item_timeout or None)

    def describe(self) -> str:
        return f"local, {self.jobs if self.started is None else self.started} process(es)"

    def run_items(self, task: BuildTask, items: list) -> Iterator[ItemOutcome]:
        """Each item's outcome, in completion order."""
        if self.jobs == 1:
            self.started = 1
            for item in items:
                try:
                    yield ItemOutcome(item, build_item(task, item))
                except Exception as exc:  # a builder bug costs one item, and is reported
                    yield ItemOutcome(item, [], _failure(exc))
            return
        if not items:
            return
        from pebble import ProcessExpired, ProcessPool
        # pebble starts every worker up front: no more than there are items to build (each
        # spawned worker imports the builder's stack, seconds and hundreds of MiB apiece)
        self.started = min(self.jobs, len(items))
        pool = ProcessPool(max_workers=self.started, initializer=_init_worker,
                           initargs=(task, os.getpid()), context=mp.get_context("spawn"))
        futures: dict = {}
        try:
            futures = {pool.schedule(_run_item, (item,), timeout=self.item_timeout): item for item in items}
            for future in cf.as_completed(futures):
                item = futures[future]
                try:
                    yield ItemOutcome(item, future.result())
                except ProcessExpired as exc:
                    yield ItemOutcome(item, [], _died(exc))
                except cf.TimeoutError:
                    yield ItemOutcome(item, [], f"ItemTimeout: building this item took longer than "
                                                f"{self.item_timeout:g} s and its worker was stopped; "
                                                f"raise {ITEM_TIMEOUT_ENV} (seconds, 0: no limit) to allow more")
                except Exception as exc:
                    yield ItemOutcome(item, [], _failure(exc))
        finally:  # finished, interrupted or abandoned: drop what has not run, stop the workers
            for future in futures:
                future.cancel()
            pool.stop()
            pool.join()

    def gpu_workers(self, count: Optional[int]) -> list:
        """``count`` GPU worker processes spread over the visible GPUs (0/None: one per GPU)."""
        from verify.worker import start_local_workers
        return start_local_workers(count)

    def assembly_pool(self, cc: tuple, jobs: Optional[int]):
        """Rows' PTX assembled by processes on this machine (``jobs``: None all cores, 0 none)."""
        from verify.device.assembly_pool import AssemblyPool
        return AssemblyPool(cc, jobs)

    def close(self) -> None:
        pass
