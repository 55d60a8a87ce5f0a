"""The local build pool survives its workers: an item whose worker segfaults (a crashing
compiler) or hangs fails alone, with a message that says so, and every other item is built;
workers start with ``spawn`` (no state copied from the driver); a run of real Triton items
with one crashing item writes every other row."""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from builders import BUILDERS
from builders.base import BuildOptions, WorkItem
from builders.triton import TritonBuilder
from dataset_spec.errors import PtxdsError
from dataset_spec.store.shards import read_records
from ptxds.executors import BuildTask
from ptxds.executors.local import ITEM_TIMEOUT_ENV, LocalExecutor
from ptxds.pipeline import run_build, select_items

# Set by the test in the driver; a worker started with fork would see it, one started with
# spawn imports this module afresh and sees None.
DRIVER_STATE = None


class CrashingBuilder:
    """Items ``ok-*`` write a marker file (their proof of work) and return no rows;
    ``segv-*`` kill their own process with SIGSEGV; ``hang-*`` sleep for a minute."""
    name = "crashing"

    def __init__(self, options):
        self.options = options

    def build(self, item):
        out = Path(self.options.extra["out"])
        if item.key.startswith("segv-"):
            os.kill(os.getpid(), signal.SIGSEGV)
        if item.key.startswith("hang-"):
            time.sleep(60)
        (out / item.key).write_text(f"{os.getpid()} {DRIVER_STATE}")
        return []


class SegfaultOnceTriton(TritonBuilder):
    """The Triton suite, but the worker building ``extra["segv_item"]`` segfaults."""
    name = "segfault-triton"

    def build(self, item):
        if item.key == self.options.extra["segv_item"]:
            os.kill(os.getpid(), signal.SIGSEGV)
        return super().build(item)


def items(*keys):
    return [WorkItem(key=k, group_id="g", label=k) for k in keys]


def task_for(tmp_path) -> BuildTask:
    return BuildTask(source="crashing", builder=f"{__name__}:CrashingBuilder",
                     options=BuildOptions(archs=["sm_80"], extra={"out": str(tmp_path)}))


def test_a_segfaulting_worker_fails_its_own_item_only(tmp_path):
    global DRIVER_STATE
    DRIVER_STATE = "copied-from-driver"
    try:
        keys = [f"ok-{i}" for i in range(7)]
        work = items(*keys[:3], "segv-a", *keys[3:])
        outcomes = list(LocalExecutor(jobs=2, item_timeout=120).run_items(task_for(tmp_path), work))
    finally:
        DRIVER_STATE = None
    by_key = {o.item.key: o for o in outcomes}
    assert sorted(by_key) == sorted(keys + ["segv-a"])  # one outcome per item
    assert by_key["segv-a"].error.startswith("WorkerDied:") and "SIGSEGV" in by_key["segv-a"].error
    assert all(by_key[k].error == "" for k in keys), [by_key[k].error for k in keys]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(keys)  # every other item built
    written = [(tmp_path / k).read_text().split() for k in keys]
    assert {state for _, state in written} == {"None"}  # spawn: nothing inherited from the driver
    assert len({pid for pid, _ in written}) >= 2  # the dead worker was replaced, the pool kept 2


def test_two_crashes_and_a_hang_cost_three_items(tmp_path):
    keys = [f"ok-{i}" for i in range(4)]
    work = items("segv-a", "hang-a", *keys[:2], "segv-b", *keys[2:])
    start = time.monotonic()
    outcomes = list(LocalExecutor(jobs=2, item_timeout=5).run_items(task_for(tmp_path), work))
    assert time.monotonic() - start < 50  # the hanging worker was stopped, not waited for
    by_key = {o.item.key: o for o in outcomes}
    assert by_key["hang-a"].error.startswith("ItemTimeout:") and ITEM_TIMEOUT_ENV in by_key["hang-a"].error
    assert "SIGSEGV" in by_key["segv-a"].error and "SIGSEGV" in by_key["segv-b"].error
    assert [k for k, o in sorted(by_key.items()) if not o.error] == keys
    assert sorted(p.name for p in tmp_path.iterdir()) == keys


def test_item_timeout_from_the_environment(monkeypatch):
    monkeypatch.setenv(ITEM_TIMEOUT_ENV, "90")
    assert LocalExecutor(jobs=2).item_timeout == 90
    monkeypatch.setenv(ITEM_TIMEOUT_ENV, "0")
    assert LocalExecutor(jobs=2).item_timeout is None
    monkeypatch.setenv(ITEM_TIMEOUT_ENV, "an hour")
    with pytest.raises(PtxdsError, match=ITEM_TIMEOUT_ENV):
        LocalExecutor(jobs=2)


def test_a_real_build_with_one_crashing_item_writes_every_other_row(tmp_path, monkeypatch):
    monkeypatch.setitem(BUILDERS, "segfault-triton", f"{__name__}:SegfaultOnceTriton")
    options = BuildOptions(archs=["sm_80"], limit=6, extra={"segv_item": ""})
    chosen = select_items(SegfaultOnceTriton(options).work_items(), 6, 0)
    assert len(chosen) == 6 and all(item.rows == 1 for item in chosen)
    crashing = chosen[1]
    options.extra["segv_item"] = crashing.key
    summary = run_build("segfault-triton", tmp_path / "out", options, jobs=2, progress=False)
    assert [label for label, _ in summary.failed_items] == [crashing.label]
    assert "SIGSEGV" in summary.failed_items[0][1]
    assert summary.rows_written == 5
    built = {r.build_key for r in read_records(tmp_path / "out")}
    assert built == {item.key for item in chosen} - {crashing.key}
