"""Build and verify through Ray, for real: a local Ray with 2 CPUs (started once per session)
builds Triton and CUTLASS rows equal to the local executor's, resumes a local build, travels
a compile cache, and survives a worker that dies mid-build with every row exactly once. The
driver-side guarantee (a build_key is written once whatever the executor hands back) is
tested without Ray."""
from __future__ import annotations

import dataclasses
import os
from collections import Counter
from pathlib import Path

import pytest

from builders import BUILDERS
from builders.base import BuildOptions
from dataset_spec.store.shards import read_records, read_table
from ptxds.executors import make_executor
from ptxds.executors.local import LocalExecutor
from ptxds.pipeline import run_build
from helpers import gpu_unavailable_reason, needs_nvcc

ROOT = Path(__file__).resolve().parents[2]
TRITON_SAMPLE = BuildOptions(archs=["sm_80"], limit=8, sample_seed=3)
CUTLASS_SLICE = BuildOptions(archs=["sm_80"], limit=2, sample_seed=1,
                             extra={"family": "cutlass_tensorop_bf16_s16816gemm_bf16_*_tn_align*"})


@pytest.fixture(scope="session")
def ray_session():
    """One local Ray for the whole session; its workers import this checkout (and the
    tests' own builders), like the driver."""
    ray = pytest.importorskip("ray")
    path = os.pathsep.join([str(ROOT), str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")])
    # Without a GPU, two GPUs are declared anyway, so verify's actors are placed and start
    # (and meet the missing driver); with GPUs, Ray counts the real ones.
    gpus = {"num_gpus": 2} if gpu_unavailable_reason() else {}
    ray.init(num_cpus=2, **gpus, object_store_memory=256 << 20, include_dashboard=False,
             log_to_driver=False, configure_logging=False, runtime_env={"env_vars": {"PYTHONPATH": path}})
    yield make_executor("ray")
    ray.shutdown()


def rows_of(folder) -> set:
    return {(r.build_key, r.kernel_id, r.ptx_hash, r.status) for r in read_records(folder)}


def load_paths(rows) -> set:
    """How verify loaded the rows: ptxas (assembled ahead) or driver_jit."""
    return {(r.provenance.get("verify") or {}).get("load") for r in rows}


def build_keys_on_disk(folder) -> Counter:
    return Counter(read_table(folder, "kernels", columns=["build_key"]).column("build_key").to_pylist())


def test_triton_rows_equal_local_and_resume_across_executors(ray_session, tmp_path):
    local = run_build("triton", tmp_path / "local", TRITON_SAMPLE, jobs=2, progress=False,
                      cache_dir=tmp_path / "cache-local")
    assert local.rows_written == 8 and not local.failed_items
    # half the items built locally, the rest through Ray into the same folder
    first_half = BuildOptions(archs=["sm_80"], limit=8, sample_seed=3)
    run_build("triton", tmp_path / "mixed", first_half, jobs=1, progress=False, cache_dir=tmp_path / "cache-ray")
    # a build stopped part-way: only some rows on disk (a finished build leaves its rows
    # published in one part per split, so cut them down to three)
    import pyarrow as pa
    import pyarrow.parquet as pq
    parts = sorted((tmp_path / "mixed" / "kernels").glob("*/part-*.parquet"))
    table = pa.concat_tables(pq.read_table(p) for p in parts)
    for path in parts:
        path.unlink()
    pq.write_table(table.slice(0, 3), parts[0])
    kept = sum(build_keys_on_disk(tmp_path / "mixed").values())
    assert 0 < kept < 8
    resumed = run_build("triton", tmp_path / "mixed", TRITON_SAMPLE, executor=ray_session, progress=False,
                        cache_dir=tmp_path / "cache-ray")
    assert resumed.items_skipped == kept and resumed.rows_written == 8 - kept
    assert rows_of(tmp_path / "mixed") == rows_of(tmp_path / "local")
    assert set(build_keys_on_disk(tmp_path / "mixed").values()) == {1}


def test_compile_cache_travels_between_ray_builds(ray_session, tmp_path):
    cache = tmp_path / "cache"
    options = BuildOptions(archs=["sm_90a"], limit=4)
    run_build("triton", tmp_path / "a", options, executor=ray_session, progress=False, cache_dir=cache)
    entries = sorted(p.relative_to(cache) for p in cache.rglob("*") if p.is_file())
    assert any(p.suffix == ".ptx" for p in entries)  # Triton's cache, in the shared folder
    run_build("triton", tmp_path / "b", options, executor=ray_session, progress=False, cache_dir=cache)
    assert sorted(p.relative_to(cache) for p in cache.rglob("*") if p.is_file()) == entries  # all hits
    assert rows_of(tmp_path / "a") == rows_of(tmp_path / "b")


@needs_nvcc
def test_cutlass_slice_rows_equal_local(ray_session, tmp_path):
    # the default cache: the CUTLASS builder tests compile this same slice
    local = run_build("cutlass", tmp_path / "local", CUTLASS_SLICE, jobs=1, progress=False)
    on_ray = run_build("cutlass", tmp_path / "ray", CUTLASS_SLICE, executor=ray_session, progress=False)
    assert local.rows_written == on_ray.rows_written == 2
    assert {s for _, _, _, s in rows_of(tmp_path / "ray")} == {"built"}
    assert rows_of(tmp_path / "ray") == rows_of(tmp_path / "local")


def test_worker_that_dies_mid_build_is_retried_and_rows_land_once(ray_session, tmp_path, monkeypatch):
    monkeypatch.setitem(BUILDERS, "die-once", "fault_builders:DieOnceBuilder")
    from fault_builders import DieOnceBuilder
    marker = tmp_path / "died"
    options = BuildOptions(archs=["sm_80"], limit=6, extra={"die_marker": str(marker)})
    keys = [item.key for item in DieOnceBuilder(options).work_items()[:6]]
    options.extra["die_item"] = keys[2]
    summary = run_build("die-once", tmp_path / "out", options, executor=ray_session, progress=False,
                        flush_rows=1)
    assert marker.exists(), "the chosen item's worker never died"
    assert not summary.failed_items and summary.rows_written == 6
    assert build_keys_on_disk(tmp_path / "out") == Counter({key: 1 for key in keys})


class _RepeatingExecutor(LocalExecutor):
    """Hands every outcome back twice, as a retried task whose first result also arrived."""

    def run_items(self, task, items):
        for outcome in super().run_items(task, items):
            yield outcome
            yield outcome


def _three_triton_rows_once(tmp_path, executor):
    """Build 3 Triton rows with ``executor``; each lands exactly once whatever it returns."""
    summary = run_build("triton", tmp_path, BuildOptions(archs=["sm_80"], limit=3), progress=False,
                        executor=executor, flush_rows=1)
    assert summary.rows_written == 3
    assert set(build_keys_on_disk(tmp_path).values()) == {1}
    return summary


def test_driver_writes_each_build_key_once_whatever_the_executor_returns(tmp_path):
    assert not _three_triton_rows_once(tmp_path, _RepeatingExecutor(1)).failed_items


class _CollidingExecutor(LocalExecutor):
    """The second item also hands back the first item's rows: two items claiming one row,
    as a builder that gave two items the same variant would."""

    def run_items(self, task, items):
        first = None
        for outcome in super().run_items(task, items):
            if first is None:
                first = outcome
            elif first.item.key != outcome.item.key:
                outcome = dataclasses.replace(outcome, records=list(first.records) + list(outcome.records))
            yield outcome


def test_rows_two_items_claim_are_reported_not_dropped_silently(tmp_path):
    summary = _three_triton_rows_once(tmp_path, _CollidingExecutor(1))
    assert len(summary.failed_items) == 2  # items 2 and 3 each claimed item 1's row
    assert all("already made" in message and "distinct variants" in message for _, message in summary.failed_items)


def test_one_job_build_puts_the_cache_environment_back(tmp_path, monkeypatch):
    monkeypatch.delenv("TRITON_CACHE_DIR", raising=False)
    run_build("triton", tmp_path / "out", BuildOptions(archs=["sm_80"], limit=1), jobs=1, progress=False,
              cache_dir=tmp_path / "cache")
    assert any((tmp_path / "cache" / "triton").iterdir())
    assert "TRITON_CACHE_DIR" not in os.environ


def test_ray_assembly_tasks_give_the_local_cubin(ray_session, tmp_path):
    from verify.device.assembly_pool import assemble_for_gpu
    run_build("triton", tmp_path / "built", BuildOptions(archs=["sm_90a"], limit=2), jobs=1, progress=False)
    rows = read_records(tmp_path / "built")
    pool = ray_session.assembly_pool((9, 0), None)
    try:
        for row in rows:
            pool.submit(row)
        got = [pool.result(row) for row in rows]
    finally:
        pool.close()
    for row, assembled in zip(rows, got):
        here = assemble_for_gpu(row.ptx, "sm_90a")
        assert assembled.path == here.path != "driver_jit"
        assert assembled.cubin == here.cubin and assembled.cubin[:4] == b"\x7fELF"
    assert pool.result(rows[0]).path == "driver_jit"  # handed out once


@pytest.mark.skipif(gpu_unavailable_reason() is None, reason="needs a machine without a GPU driver")
def test_verify_actors_start_and_report_a_missing_driver_in_one_line(ray_session, tmp_path):
    from verify import verify_dataset
    from verify.device.driver import NoDriverError
    run_build("triton", tmp_path / "built", BuildOptions(archs=["sm_80"], limit=1), jobs=1, progress=False)
    with pytest.raises(NoDriverError, match="NVIDIA GPU") as caught:
        verify_dataset(tmp_path / "built", tmp_path / "verified", progress=False,
                       start_workers=ray_session.gpu_workers)
    assert "\n" not in str(caught.value)
    assert not (tmp_path / "verified" / "kernels").exists()


def test_address_without_ray_executor_is_one_clear_error(tmp_path):
    from click.testing import CliRunner
    from ptxds.cli import cli
    result = CliRunner().invoke(cli, ["build", "--source", "triton", "--out", str(tmp_path / "d"),
                                      "--address", "10.0.0.1:6379"])
    assert result.exit_code == 1
    assert result.output == "Error: --address names a Ray cluster; add --executor ray\n"
    assert not (tmp_path / "d").exists()


@pytest.mark.gpu
def test_verify_on_ray_actors_matches_local_workers(tmp_path):
    """One actor per GPU gives the statuses of local worker processes, on every GPU."""
    ray = pytest.importorskip("ray")
    from verify import verify_dataset
    run_build("triton", tmp_path / "built", BuildOptions(archs=["sm_90a"], limit=8, sample_seed=5), jobs=2,
              progress=False)
    verify_dataset(tmp_path / "built", tmp_path / "local", timing=False, progress=False)
    started = not ray.is_initialized()
    executor = make_executor("ray")
    try:
        verify_dataset(tmp_path / "built", tmp_path / "ray", timing=False, progress=False,
                       start_workers=executor.gpu_workers, assembly_pool=executor.assembly_pool)
        gpus = int(ray.cluster_resources().get("GPU", 0))
    finally:
        if started:
            executor.close()
    local, on_ray = read_records(tmp_path / "local"), read_records(tmp_path / "ray")
    assert {r.build_key: r.status for r in on_ray} == {r.build_key: r.status for r in local}
    assert load_paths(on_ray) == load_paths(local)  # assembled ahead, by Ray tasks as by local processes
    used = {r.provenance["verify"]["gpu"] for r in on_ray if r.provenance.get("verify")}
    groups = {r.group_id for r in on_ray}
    assert len(groups) >= 2
    assert len(used) == min(gpus, len(groups))  # each actor takes a group as it starts


def test_an_actors_gpu_is_found_by_its_pci_bus_id():
    from ptxds.executors.ray_cluster import driver_ordinal, parse_bus_id
    assert parse_bus_id("0000:07:00.0") == (0, 7, 0) and parse_bus_id("00000000:1A:00.0") == (0, 26, 0)
    assert parse_bus_id("") is None and parse_bus_id("GPU-1234") is None
    # no GPU of this process has the bus id (or none is visible): the actor's index stands
    assert driver_ordinal("0000:ff:1f.0", 3) == 3 and driver_ordinal(None, 1) == 1


def test_actors_on_two_nodes_are_two_gpus_whatever_their_ordinals_here():
    from ptxds.executors.ray_cluster import RayGpuWorker
    from verify.runner import gpu_identity
    bus = "0000:07:00.0"
    # identical machines: the same bus id on two nodes, and both mapped to ordinal 0 here
    a, b, shared = (RayGpuWorker(None, None, 0, {"node": node, "pci_bus_id": bus}) for node in ("n1", "n2", "n1"))
    assert gpu_identity(a) != gpu_identity(b) and gpu_identity(a) == gpu_identity(shared)
