"""The ptxds command line, run for real: help, errors, build -> info -> load_dataset, and a
build killed with SIGKILL mid-way that resumes without duplicates."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from dataset_spec.store.shards import part_files, read_records, read_table
from ptxds.cli import cli

ROOT = Path(__file__).resolve().parents[2]


def run_cli(*args):
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result


@pytest.mark.parametrize("command", ["build", "info", "verify", "report"])
def test_every_command_has_help_with_an_example(command):
    result = run_cli(command, "--help")
    assert result.exit_code == 0
    assert "Example:" in result.output


def test_unknown_source_lists_known_ones(tmp_path):
    result = run_cli("build", "--source", "nope", "--out", str(tmp_path / "d"))
    assert result.exit_code == 2  # a usage error, like a bad --arch
    assert result.output.strip().splitlines()[-1] == \
        "Error: unknown source 'nope'; known sources: cutlass, cutlass-conv, handhack, inductor, mirage, ptx, tilelang, triton, triton-dump, triton-jit, tvm, tvm-models"


def test_unknown_arch_is_rejected(tmp_path):
    result = run_cli("build", "--source", "triton", "--out", str(tmp_path / "d"), "--arch", "sm_99")
    assert result.exit_code == 2
    assert "unknown arch 'sm_99'" in result.output


def test_info_on_empty_folder_says_what_to_do(tmp_path):
    result = run_cli("info", str(tmp_path))
    assert result.exit_code == 1
    assert result.output.strip() == (f"Error: {tmp_path} is not a dataset folder (it has no "
                                     "kernels/<split>/part-*.parquet); make one with: ptxds build --source triton --out DIR")


def test_verify_refuses_to_write_in_place(tmp_path):
    result = run_cli("verify", str(tmp_path), "--out", str(tmp_path))
    assert result.exit_code == 2
    assert "never changed in place" in result.output


LIMIT = 24


def _build_cmd(out, *extra):
    return [sys.executable, "-m", "ptxds", "build", "--source", "triton", "--out", str(out),
            "--silent", *extra]


@pytest.fixture(scope="module")
def small_triton_build(tmp_path_factory):
    out = tmp_path_factory.mktemp("triton") / "ds"
    subprocess.run(_build_cmd(out, "--limit", str(LIMIT), "--arch", "sm_80,sm_90a"), check=True, cwd=ROOT)
    return out


def test_build_info_and_load_dataset(small_triton_build, tmp_path, monkeypatch):
    result = run_cli("info", str(small_triton_build), "--json")
    assert result.exit_code == 0, result.output
    assert f'"rows": {LIMIT}' in result.output
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    loaded = datasets.load_dataset(str(small_triton_build), "kernels")
    rows = [row for split in loaded for row in loaded[split]]
    assert len(rows) == LIMIT
    for row in rows:
        assert row["status"] == "built", row["status_message"]
        assert row["launches"] and row["launches"][0]["args"]
        assert row["variant"].startswith("{")


def test_killed_build_resumes_without_duplicates(small_triton_build, tmp_path):
    out = tmp_path / "ds"
    cmd = _build_cmd(out, "--limit", str(LIMIT), "--jobs", "1", "--flush-rows", "1")
    cold_cache = dict(os.environ, TRITON_CACHE_DIR=str(tmp_path / "triton-cache"))
    proc = subprocess.Popen(cmd, cwd=ROOT, env=cold_cache, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while time.time() < deadline and not part_files(out) and proc.poll() is None:
        time.sleep(0.02)
    assert proc.poll() is None, "the build finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    partial = read_table(out, "kernels").num_rows
    assert 1 <= partial < LIMIT
    subprocess.run(cmd, check=True, cwd=ROOT, env=cold_cache)
    keys = read_table(out, "kernels", columns=["build_key"]).column("build_key").to_pylist()
    assert len(keys) == len(set(keys)) == LIMIT
    expected = {(r.build_key, r.ptx_hash) for r in read_records(small_triton_build)}
    assert {(r.build_key, r.ptx_hash) for r in read_records(out)} == expected
    # a third run finds nothing to do
    again = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True)
    assert f"0 rows written ({LIMIT} of {LIMIT} work items already done)" in again.stdout


def test_missing_toolchain_is_one_clear_error(tmp_path):
    env = dict(os.environ, PTXDS_CUDA_HOME=str(tmp_path / "no-cuda"))
    (tmp_path / "no-cuda").mkdir()
    result = subprocess.run(_build_cmd(tmp_path / "d", "--limit", "1"), cwd=ROOT, env=env,
                            capture_output=True, text=True)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"Error: ptxas not found in {tmp_path / 'no-cuda'}/bin; install the "
                               "pinned CUDA wheels: pip install nvidia-cuda-nvcc==13.0.88")
    assert not (tmp_path / "d" / "kernels").exists()


def test_verify_without_a_gpu_is_one_clear_error(small_triton_build, tmp_path):
    from helpers import gpu_unavailable_reason
    if gpu_unavailable_reason() is None:
        pytest.skip("a GPU is present here")
    result = run_cli("verify", str(small_triton_build), "--out", str(tmp_path / "v"))
    assert result.exit_code == 1
    assert result.output.startswith("Error: no CUDA")
    assert result.output.strip().endswith("needs a machine with an NVIDIA GPU and its driver (build and info do not)")
    assert len(result.output.strip().splitlines()) == 1


def test_verify_of_no_matching_group_is_one_clear_error_and_writes_nothing(small_triton_build, tmp_path):
    out = tmp_path / "not" / "there"
    result = run_cli("verify", str(small_triton_build), "--out", str(out), "--groups", "no-such-group*")
    assert result.exit_code == 1
    assert result.output.startswith("Error: no group of ") and "matches --groups 'no-such-group*'" in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "not").exists()


def test_commands_outside_report_do_not_import_the_plotting_stack(small_triton_build, tmp_path):
    """Every command's error handling used to import the report package, and with it
    matplotlib: about a second on each command and each build's start."""
    code = ("import sys\nfrom ptxds.cli import cli\n"
            f"try:\n    cli(['verify', {str(small_triton_build)!r}, '--out', {str(tmp_path / 'v')!r}, '--groups', 'zz*'])\n"
            "except SystemExit:\n    pass\n"
            "print('plotting imported:', 'matplotlib' in sys.modules or 'ptxds.report' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert "Error: no group of" in result.stderr + result.stdout
    assert "plotting imported: False" in result.stdout


def test_schedules_applies_to_tvm_only(tmp_path):
    result = run_cli("build", "--source", "mirage", "--schedules", "3", "--out", str(tmp_path / "d"))
    assert result.exit_code != 0
    assert "--schedules applies to --source tvm" in result.output


@pytest.mark.parametrize("flag, sources", [(("--workloads", "matmul_fp16"), "tilelang and tvm"),
                                           (("--tensor-cores", "only"), "tvm and tvm-models")])
def test_tvm_selection_flags_apply_to_tvm_only(tmp_path, flag, sources):
    result = run_cli("build", "--source", "mirage", *flag, "--out", str(tmp_path / "d"))
    assert result.exit_code != 0
    assert f"{flag[0]} applies to --source {sources}, not mirage" in result.output
