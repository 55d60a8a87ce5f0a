"""The GPU worker's handle starts the next worker ahead once a member has crashed one
(verify/worker.py, GpuWorker): a later crash takes the worker already started instead of
waiting seconds for a new process, imports and a CUDA context; one that died before it was
needed is replaced by a fresh start; closing the handle leaves no process behind.

The processes are real (spawned as the verifier spawns them); what they run is a stand-in
for the worker's main loop, since this machine has no GPU."""
from __future__ import annotations

import os

import pytest

from verify.worker import GpuWorker, WorkerDied


def _stand_in_main(conn, ordinal: int) -> None:
    """Says hello as a worker does (after a while, as a CUDA context takes one), then answers
    any job with its process id; "die" ends the process without an answer, as a crashed
    kernel's worker does."""
    import time
    time.sleep(0.5)
    conn.send({"type": "hello", "info": {"ordinal": ordinal, "name": "stand-in"}, "sm_clock_mhz": 0})
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job["type"] == "stop":
            return
        if job["type"] == "die":
            os._exit(3)
        conn.send({"pid": os.getpid()})


class _StandInWorker(GpuWorker):
    entry = staticmethod(_stand_in_main)


def _pid(worker) -> int:
    return worker._request({"type": "pid"}, 30.0)["pid"]


def _crash(worker) -> None:
    with pytest.raises(WorkerDied):
        worker._request({"type": "die"}, 30.0)


def test_after_a_crash_the_next_worker_is_started_ahead_and_taken_by_the_next_crash():
    worker = _StandInWorker(0)
    try:
        first = _pid(worker)
        assert worker._spare is None  # nothing crashed yet: no process waits idle
        _crash(worker)
        second = _pid(worker)  # started now, and the next one beside it
        assert second != first and worker.restarts == 1
        spare_proc = worker._spare[0]
        assert spare_proc.is_alive()
        _crash(worker)
        assert _pid(worker) == spare_proc.pid and worker.restarts == 2
        assert worker._spare is not None and worker._spare[0].pid != spare_proc.pid
    finally:
        spares = [worker._spare[0]] if worker._spare else []
        worker.close()
    assert worker.proc is None and worker._spare is None
    assert all(not p.is_alive() for p in spares)


def test_no_member_is_timed_while_the_worker_started_ahead_is_still_starting():
    worker = _StandInWorker(0)
    try:
        _crash(worker)
        _pid(worker)  # a new worker, and the next one starting beside it
        assert not worker._spare[1].poll(0)
        worker.time("row", 0.1, 30.0)
        assert worker._spare[1].poll(0)  # its hello was there before the timing job went out
    finally:
        worker.close()


def test_a_worker_started_ahead_that_died_idle_is_replaced_by_a_fresh_one():
    worker = _StandInWorker(0)
    try:
        _crash(worker)
        _pid(worker)
        dead = worker._spare[0]
        dead.kill()
        dead.join(10)
        _crash(worker)
        assert _pid(worker) not in (None, dead.pid) and worker.restarts == 2
    finally:
        worker.close()
