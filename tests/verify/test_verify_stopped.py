"""A verify run stopped part way (Ctrl-C, SIGTERM from a scheduler or a time limit) keeps the
groups it wrote, so the next run resumes after them, and says on stderr where its time went
so far: a run cut off by its time limit is still a measurement. Runs verify_dataset on CPU with
the host stand-in workers of test_verify_split."""
from __future__ import annotations

import pytest
from test_verify_split import _HostVectorAdd, _rows

from dataset_spec.store.shards import ShardWriter, read_records


class _StoppedAtSecondGroup(_HostVectorAdd):
    def check(self, record_json, group, *args, **kwargs):
        if group == "ptx/stop-b":
            raise KeyboardInterrupt
        return super().check(record_json, group, *args, **kwargs)


def test_a_stopped_run_keeps_its_groups_and_prints_its_stage_seconds(tmp_path, capfd):
    from verify import verify_dataset
    ShardWriter(tmp_path / "in").write(_rows("ptx/stop-a", 2048, 2) + _rows("ptx/stop-b", 2048, 2))
    settings = dict(progress=False, reference="numpy", inputs="host", time_budget=0.1, assemble_jobs=0,
                    workers=1, split=False)
    with pytest.raises(KeyboardInterrupt):
        verify_dataset(tmp_path / "in", tmp_path / "out", start_workers=lambda n: [_StoppedAtSecondGroup(0, [])],
                       **settings)
    said = capfd.readouterr().err
    assert "verify stopped after 1 of 2 groups; seconds per stage so far: " in said and "judge " in said
    assert {r.group_id for r in read_records(tmp_path / "out")} == {"ptx/stop-a"}
    verify_dataset(tmp_path / "in", tmp_path / "out", start_workers=lambda n: [_HostVectorAdd(0, [])], **settings)
    rows = read_records(tmp_path / "out")
    assert sorted(r.group_id for r in rows) == ["ptx/stop-a"] * 2 + ["ptx/stop-b"] * 2
    assert {r.status for r in rows} == {"passed"}


class _StopMidGroup(_HostVectorAdd):
    """Stops the run (as Ctrl-C does: SIGINT to the main thread) while the last member of the
    second group runs, then answers as a worker the same signal killed would: a check that
    died. The GPU thread goes on and finishes the group; the verifier must not write it."""

    def check(self, record_json, group, *args, **kwargs):
        import signal
        import threading
        import time
        from verify.judge.outcome import CheckResult
        if group == "ptx/mid-b" and '"ptx/mid-b-m1"' in record_json:
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
            time.sleep(0.3)  # the main thread takes the interrupt and marks the run stopping
            return CheckResult(error="died", message="worker exited without a result (exit code -2)", fatal=True)
        return super().check(record_json, group, *args, **kwargs)


def test_a_group_whose_worker_the_stop_killed_is_not_written(tmp_path):
    from verify import verify_dataset
    ShardWriter(tmp_path / "in").write(_rows("ptx/mid-a", 2048, 2) + _rows("ptx/mid-b", 2048, 2))
    settings = dict(progress=False, reference="numpy", inputs="host", time_budget=0.1, assemble_jobs=0,
                    workers=1, split=False)
    import signal
    # Python's own Ctrl-C handler, whatever the test runner set (pytest-xdist workers ignore SIGINT)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            verify_dataset(tmp_path / "in", tmp_path / "out", start_workers=lambda n: [_StopMidGroup(0, [])],
                           **settings)
    finally:
        signal.signal(signal.SIGINT, previous)
    import time
    time.sleep(0.5)  # a GPU thread left running would write the group now
    assert {r.group_id for r in read_records(tmp_path / "out")} == {"ptx/mid-a"}
    verify_dataset(tmp_path / "in", tmp_path / "out", start_workers=lambda n: [_HostVectorAdd(0, [])], **settings)
    assert {(r.group_id, r.status) for r in read_records(tmp_path / "out")} == {("ptx/mid-a", "passed"),
                                                                              ("ptx/mid-b", "passed")}
