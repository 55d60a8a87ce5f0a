"""The local executor: a process pool on this machine for build work items, and one GPU
worker process per local GPU for verify. The embedded default."""
from __future__ import annotations

import concurrent.futures as cf
import os
from typing import Iterator, Optional

from . import BuildTask, ItemOutcome, build_item

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


class LocalExecutor:
    """``jobs`` worker processes (0: one per core; 1: in this process)."""
    name = "local"

    def __init__(self, jobs: int = 0):
        self.jobs = jobs or os.cpu_count() or 1

    def describe(self) -> str:
        return f"local, {self.jobs} process(es)"

    def run_items(self, task: BuildTask, items: list) -> Iterator[ItemOutcome]:
        """Each item's outcome, in completion order."""
        if self.jobs == 1:
            for item in items:
                try:
                    yield ItemOutcome(item, build_item(task, item))
                except Exception as exc:  # a builder bug costs one item, and is reported
                    yield ItemOutcome(item, [], _failure(exc))
            return
        with cf.ProcessPoolExecutor(self.jobs, initializer=_init_worker, initargs=(task, os.getpid())) as pool:
            futures = {pool.submit(_run_item, item): item for item in items}
            try:
                for future in cf.as_completed(futures):
                    try:
                        yield ItemOutcome(futures[future], future.result())
                    except Exception as exc:
                        yield ItemOutcome(futures[future], [], _failure(exc))
            finally:  # interrupted or abandoned: drop what has not started
                for future in futures:
                    future.cancel()

    def gpu_workers(self, count: Optional[int]) -> list:
        """``count`` GPU worker processes spread over the visible GPUs (0/None: one per GPU)."""
        from verify.worker import start_local_workers
        return start_local_workers(count)

    def assembly_pool(self, cc: tuple, jobs: Optional[int]):
        """Rows' PTX assembled by processes on this machine (``jobs``: None all cores, 0 none)."""
        from verify.assembly_pool import AssemblyPool
        return AssemblyPool(cc, jobs)

    def close(self) -> None:
        pass
