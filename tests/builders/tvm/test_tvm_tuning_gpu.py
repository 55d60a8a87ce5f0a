"""Tuning rounds on a machine with TVM and a GPU (``ptxds tune-tvm run``): each round's
candidates are verified and timed by ``ptxds verify``, and their times land in the
MetaSchedule database; the second round comes from MetaSchedule's evolutionary search."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.gpu


def test_two_rounds_measure_candidates_into_the_database(tmp_path):
    pytest.importorskip("tvm")
    from tvm.s_tir import meta_schedule as ms
    from dataset_spec.store.dataset import Dataset
    from builders.tvm.commands import run_rounds
    from ptxds.cli import command_host
    summary = run_rounds(command_host(), tmp_path / "db", ["matmul_fp16/small"], rounds=2, candidates=4,
                         out_dir=tmp_path, progress=False, verify_settings={"time_budget": 0.2})
    assert len(summary.rounds) == 2
    for index, result in enumerate(summary.rounds):
        rows = [r for r in Dataset.open(result.verified).records() if r.status != "build_failed"]
        assert rows and all(r.status == "passed" and r.time_us_median > 0 for r in rows), \
            [(r.name, r.status, r.status_message[:200]) for r in rows]
        assert {r.variant["search"] for r in rows} == {"seeded" if index == 0 else "evolutionary"}
        assert result.commit.added == len(rows)
    db = ms.database.JSONDatabase(work_dir=str(tmp_path / "db"), allow_missing=False)
    measured = sorted(float(r.run_secs[0]) for r in db.get_all_tuning_records())
    assert len(measured) == sum(r.commit.added + r.commit.failed for r in summary.rounds)
    assert 0 < measured[0] < 1e-2
