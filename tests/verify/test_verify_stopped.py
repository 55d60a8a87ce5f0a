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
