"""Tuning of the tvm source measured on the GPU (builders/tvm/tuning.py): proposals are real
TVM schedules compiled by the pinned nvcc; a verified dataset, written the way ``ptxds
verify`` writes one (its own timing functions), commits into a MetaSchedule JSONDatabase
that MetaSchedule itself opens; the next round comes from MetaSchedule's EvolutionarySearch;
``build --tuning-db`` builds the database's top records, and the default build's keys stay."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

WORKLOAD = "matmul_fp16/small"
GROUP = f"tvm/{WORKLOAD}"
ARCH = "sm_90a"


def _propose(out, db, count, seed=0):
    from builders.base import BuildOptions
    from ptxds.pipeline import run_build
    summary = run_build("tvm", out, BuildOptions(archs=[ARCH], sample_seed=seed, extra={
        "workloads": [WORKLOAD], "tuning_db": str(db), "propose": count}), jobs=1, progress=False)
    assert not summary.failed_items, summary.failed_items
    from dataset_spec.store.dataset import Dataset
    return Dataset.open(out).records()


def _verified(rows, out, times_us: dict, wrong=()):
    """``rows`` as ``ptxds verify`` writes them: status, GPU columns, and timing columns from a
    worker's timing reply (verify.timing.timing's summary and reply, verify.runner.record_timing)."""
    import numpy as np
    from dataset_spec.store.dataset import Dataset
    from builders import source_credits
    from verify.runner import record_timing
    from verify.timing.timing import Timing, summarise
    import copy
    rng = np.random.default_rng(0)
    verified = []
    for row in copy.deepcopy(rows):
        row.gpu_name, row.driver_version, row.trials = "NVIDIA H100 80GB HBM3", "580.65.06", 5
        if row.name in wrong:
            row.status, row.status_message = "wrong_result", "trial 0 (normal): 12 of 65536 elements outside the bound"
        elif row.status == "built":
            row.status, row.max_abs_err, row.max_err_ratio = "passed", 1e-3, 0.05
            samples = times_us[row.name] * (1 + 0.002 * rng.standard_normal(200))
            stats = summarise(samples)
            record_timing(row, Timing(stats, "cupti", summarise(samples * 1.01)).reply(1980))
        verified.append(row)
    Dataset(out).write(verified)
    Dataset(out, credits=source_credits).publish()
    return verified


@pytest.fixture(scope="module")
def rounds(tmp_path_factory):
    """Round 0 proposed, verified (one wrong member) and committed; round 1 proposed."""
    pytest.importorskip("tvm")
    import os
    os.environ["PTXDS_TVM_CACHE"] = str(tmp_path_factory.mktemp("tvm-cache"))
    from builders.tvm import tuning
    root = tmp_path_factory.mktemp("tune")
    db = root / "db"
    proposed = _propose(root / "r0", db, 4)
    built = [r for r in proposed if r.status == "built"]
    times = {r.name: 40.0 + 15.0 * i for i, r in enumerate(built)}
    wrong = (built[-1].name,)
    verified = _verified(proposed, root / "r0-verified", times, wrong)
    first = tuning.commit(db, root / "r0-verified")
    second = tuning.commit(db, root / "r0-verified")
    return {"root": root, "db": db, "proposed": proposed, "verified": verified, "times": times, "wrong": wrong,
            "first": first, "second": second}


def test_round_zero_proposes_seeded_samples_as_rows_with_traces(rounds):
    proposed = rounds["proposed"]
    built = [r for r in proposed if r.status == "built"]
    assert len(built) == 4 and len({r.ptx_hash for r in built}) == 4
    for r in built:
        assert r.group_id == GROUP and r.arch == ARCH and r.resources   # ptxas assembled it
        assert r.variant["generator"] == "metaschedule-tune" and r.variant["search"] == "seeded"
        assert "sch.enter_postproc()" in r.variant["trace"]
        assert json.loads(r.variant["trace_json"])
        assert r.launches and r.launches[0].entry in r.ptx
        assert r.provenance["tuning"]["trials"] == 0


def test_commit_writes_metaschedule_records_with_the_verified_times(rounds):
    from tvm.s_tir import meta_schedule as ms
    from builders.tvm import tuning
    from builders.tvm.builder import selected_workloads
    from builders.tvm.schedules import cuda_target, prim_func
    from builders.tvm.workloads import build_te
    first, second = rounds["first"], rounds["second"]
    assert (first.added, first.failed, first.already) == (3, 1, 0)
    assert (second.added, second.failed, second.already) == (0, 0, 4)   # idempotent by trace
    # MetaSchedule opens it on its own
    db = ms.database.JSONDatabase(work_dir=str(rounds["db"]), allow_missing=False)
    w, = selected_workloads([WORKLOAD])
    mod = tuning.tuning_module(prim_func(build_te(w), w.symbol), cuda_target(ARCH))
    assert db.has_workload(mod)
    workload = db.commit_workload(mod)
    records = db.get_all_tuning_records()
    assert len(records) == 4
    assert {str(r.target.attrs["arch"]) for r in records} == {"sm_90"}
    top = db.get_top_k(workload, 10)
    by_name = {r.name: r for r in rounds["verified"]}
    passing = sorted((r for r in by_name.values() if r.status == "passed"), key=lambda r: r.time_us_median)
    assert [float(t.run_secs[0]) for t in top] == pytest.approx([r.time_us_median * 1e-6 for r in passing])
    assert [tuning.trace_json(t.trace) for t in top] == [
        tuning.trace_json(tuning.replay(mod, r.variant["trace_json"]).trace) for r in passing]
    failed = [r for r in records if float(r.run_secs[0]) >= tuning.FAILED_RUN_SECS]
    assert len(failed) == 1 and len(list(failed[0].args_info)) == 3


def test_next_round_comes_from_evolutionary_search_and_is_new(rounds):
    from builders.tvm import tuning
    proposed = _propose(rounds["root"] / "r1", rounds["db"], 3)
    built = [r for r in proposed if r.status == "built"]
    assert built and all(r.variant["search"] == "evolutionary" for r in built)
    assert all(r.provenance["tuning"]["trials"] == 4 for r in proposed)
    old = {json.dumps(json.loads(r.variant["trace_json"])) for r in rounds["proposed"] if "trace_json" in r.variant}
    assert not old & {json.dumps(json.loads(r.variant["trace_json"])) for r in built}
    assert tuning.database_digest(rounds["db"]) not in {r.provenance["tuning"]["db_digest"] for r in rounds["proposed"]}


def test_build_with_tuning_db_builds_the_top_records_with_provenance(rounds):
    from builders.base import BuildOptions
    from builders.tvm import TvmBuilder, tuning
    from ptxds.pipeline import build_and_finalize
    db = rounds["db"]
    builder = TvmBuilder(BuildOptions(archs=[ARCH], extra={"workloads": [WORKLOAD], "tuning_db": str(db),
                                                           "schedules": 3, "tensor_cores": False}))
    item, = builder.work_items()
    assert item.key.startswith(f"{GROUP}/{ARCH}/tuned/")
    rows = build_and_finalize(builder, item, False)
    assert [r.status for r in rows] == ["built"] * 3
    assert rows[0].variant["generator"] == "dlight"
    tuned = rows[1:]
    digest = hashlib.sha256()
    for name in tuning.DB_FILES:
        digest.update(name.encode() + b"\0" + (Path(db) / name).read_bytes() + b"\0")
    passing = sorted((r for r in rounds["verified"] if r.status == "passed"), key=lambda r: r.time_us_median)
    # 2 members from 3 passing records: the fastest, then the slowest passing one
    for row, rank, source in zip(tuned, (1, 3), (passing[0], passing[2])):
        tune = row.provenance["tuning"]
        assert tune["db_digest"] == digest.hexdigest()
        assert (tune["trials"], tune["passing"], tune["rank"]) == (4, 3, rank)
        assert tune["measured_us"] == pytest.approx(source.time_us_median)
        assert row.variant["generator"] == "metaschedule-tuned"
        assert row.ptx_hash == source.ptx_hash   # the record's trace replays to the measured kernel


def test_spread_takes_the_top_then_quantiles_down_to_the_slowest():
    from builders.tvm.tuning import spread_ranks
    assert spread_ranks(100, 9) == [0, 1, 2, 3, 4, 29, 52, 75, 99]
    assert spread_ranks(3, 9) == [0, 1, 2]
    assert spread_ranks(10, 1) == [0]


def test_default_build_keys_do_not_change():
    """Without --tuning-db the rows are today's: same items, same build keys."""
    pytest.importorskip("tvm")
    from builders.base import BuildOptions
    from builders.tvm import TvmBuilder
    builder = TvmBuilder(BuildOptions(archs=["sm_90a"], extra={"schedules": 3, "workloads": ["row_sum/small"]}))
    item, = builder.work_items()
    assert item.key == "tvm/row_sum/small/sm_90a/n3/s0"
    rows = builder.build(item)
    assert [(r.name, r.build_key) for r in rows] == [
        ("tvm_row_sum_small_dlight", "a30de9bc6540d2df3656ec40"),
        ("tvm_row_sum_small_ms/0/1042927459", "ba3a1e3fc4888c68a45f23f0"),
        ("tvm_row_sum_small_ms/1/152115414", "ce093575796d2758c94972e5")]


def test_bad_input_is_one_line(rounds, tmp_path):
    from builders.base import BuildOptions
    from builders.tvm import TvmBuilder, tuning
    from dataset_spec.errors import PtxdsError
    # a dataset that was built, not verified
    with pytest.raises(tuning.TuningError, match="is not verified.*ptxds verify"):
        tuning.commit(rounds["db"], rounds["root"] / "r0")
    # a database of another target
    with pytest.raises(tuning.TuningError, match="for sm_90, not sm_80"):
        TvmBuilder(BuildOptions(
            archs=["sm_80"], extra={"workloads": [WORKLOAD], "tuning_db": str(rounds["db"]), "propose": 2})).work_items()
    # candidates for two archs at once
    with pytest.raises(tuning.TuningError, match="built for one arch"):
        TvmBuilder(BuildOptions(archs=["sm_80", ARCH], extra={
            "workloads": [WORKLOAD], "tuning_db": str(rounds["db"]), "propose": 2})).work_items()
    # a database that measured none of the selected workloads
    with pytest.raises(PtxdsError, match="holds no measured record of the selected workloads.*tvm/matmul_fp16/small"):
        TvmBuilder(BuildOptions(archs=[ARCH], extra={"workloads": ["row_sum/small"],
                                                     "tuning_db": str(rounds["db"])})).work_items()
    # a folder that is no database
    (tmp_path / "empty").mkdir()
    with pytest.raises(tuning.TuningError, match="is not a tuning database"):
        TvmBuilder(BuildOptions(archs=[ARCH], extra={"workloads": [WORKLOAD],
                                                     "tuning_db": str(tmp_path / "empty")})).work_items()


def test_no_tvm_is_one_line(monkeypatch):
    import sys
    from builders.tvm import tuning
    monkeypatch.setitem(sys.modules, "tvm", None)
    with pytest.raises(tuning.TuningError, match=r"needs TVM.*pip install -e '\.\[tvm\]'"):
        tuning.require_tvm()


def test_cli_commit_says_what_it_added_and_refuses_an_unverified_dataset(rounds):
    from click.testing import CliRunner
    from ptxds.cli import cli
    db = str(rounds["db"])
    again = CliRunner().invoke(cli, ["tune-tvm", "commit", "--db", db, str(rounds["root"] / "r0-verified")])
    assert again.exit_code == 0, again.output
    assert "0 measured record(s) added, 0 failed run(s) recorded (run_secs 1e10), 4 already there" in again.output
    assert f"{GROUP} {ARCH}: 4 records" in again.output
    unverified = CliRunner().invoke(cli, ["tune-tvm", "commit", "--db", db, str(rounds["root"] / "r0")])
    assert unverified.exit_code == 1
    assert unverified.output.strip().count("\n") == 0 and "is not verified" in unverified.output


def test_cli_without_tvm_is_one_line(monkeypatch, tmp_path):
    import sys
    from click.testing import CliRunner
    from ptxds.cli import cli
    monkeypatch.setitem(sys.modules, "tvm", None)
    result = CliRunner().invoke(cli, ["tune-tvm", "propose", "--db", str(tmp_path / "db"), "--workloads",
                                      WORKLOAD, "--out", str(tmp_path / "out")])
    assert result.exit_code == 1
    assert result.output.startswith("Error: ptxds tune-tvm needs TVM") and result.output.count("\n") == 1
    assert not (tmp_path / "out").exists()


def test_cli_run_without_a_gpu_is_one_line_before_any_build(tmp_path):
    pytest.importorskip("tvm")
    from click.testing import CliRunner
    from helpers import gpu_unavailable_reason
    from ptxds.cli import cli
    if gpu_unavailable_reason() is None:
        pytest.skip("a GPU is present: tests/builders/tvm/test_tvm_tuning_gpu.py runs the rounds")
    result = CliRunner().invoke(cli, ["tune-tvm", "run", "--db", str(tmp_path / "db"), "--workloads", WORKLOAD,
                                      "--rounds", "1", "--out", str(tmp_path / "rounds")])
    assert result.exit_code == 1 and result.output.startswith("Error: no CUDA") and result.output.count("\n") == 1
    assert not (tmp_path / "rounds").exists()
