"""A new user's first hour: every command checks its options, says plainly when a folder
is not a dataset or a selection matches nothing, changes nothing on bad input, works with
the base install, and leaves no process behind when its build is killed."""
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from builders.base import BuildOptions, WorkItem
from dataset_spec.store.shards import part_files
from ptxds.cli import cli
from ptxds.pipeline import plan_build, select_items

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "data" / "verified" / "dataset"


def run_cli(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def one_error_line(result) -> str:
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    return lines[0]


@pytest.fixture()
def unverified(tmp_path):
    """A copy of the fixture's kernels with the verifier's work undone: a built dataset."""
    out = tmp_path / "built"
    shutil.copytree(FIXTURE, out)
    import pyarrow.parquet as pq
    for path in part_files(out, "kernels"):
        table = pq.read_table(path)
        statuses = table.column("status").to_pylist()
        table = table.set_column(table.schema.get_field_index("status"), "status",
                                 __import__("pyarrow").array(["built" if s not in ("build_failed",) else s
                                                              for s in statuses]))
        pq.write_table(table, path)
    shutil.rmtree(out / "pairs", ignore_errors=True)
    return out


def snapshot(folder: Path) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# ---- 1. info works without the report extra ----------------------------------------------

def test_info_works_without_matplotlib():
    code = ("import sys\nsys.modules['matplotlib'] = None  # as if the report extra were not installed\n"
            "from ptxds.cli import cli\n"
            f"cli(['info', {str(FIXTURE)!r}])\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert "groups" in result.stdout


def test_report_without_matplotlib_names_the_extra(tmp_path):
    code = ("import sys\nsys.modules['matplotlib'] = None\nfrom ptxds.cli import cli\n"
            f"cli(['report', {str(FIXTURE)!r}, '--out', {str(tmp_path / 'r')!r}, '--no-card'])\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 1
    assert "pip install 'ptxds[report]'" in result.stderr


# ---- 3. numeric options are ranges -------------------------------------------------------

@pytest.mark.parametrize("option,value", [("--limit", "-1"), ("--limit", "0"), ("--jobs", "-3"), ("--jobs", "0"),
                                          ("--per-family", "0"), ("--schedules", "0"), ("--sm-count", "0")])
def test_build_numeric_options_are_checked(tmp_path, option, value):
    result = run_cli("build", "--source", "triton", "--out", tmp_path / "d", option, value)
    assert result.exit_code == 2
    assert f"Invalid value for '{option}': {value} is not in the range" in result.output
    assert not (tmp_path / "d").exists()


@pytest.mark.parametrize("args", [("--trials", "0"), ("--workers", "0"), ("--kernel-timeout", "0")])
def test_verify_numeric_options_are_checked(tmp_path, args):
    result = run_cli("verify", FIXTURE, "--out", tmp_path / "v", *args)
    assert result.exit_code == 2
    assert f"Invalid value for '{args[0]}'" in result.output
    assert not (tmp_path / "v").exists()


def test_rewrite_counts_are_checked(unverified):
    before = snapshot(unverified)
    result = run_cli("rewrite", unverified, "--mutants", "-1")
    assert result.exit_code == 2 and "Invalid value for '--mutants'" in result.output
    assert snapshot(unverified) == before


# ---- 4. a selection that matches nothing is an error --------------------------------------

def test_family_that_matches_nothing_is_an_error_naming_close_names(tmp_path):
    pytest.importorskip("cutlass_library")
    result = run_cli("build", "--source", "cutlass", "--arch", "sm_80", "--out", tmp_path / "d",
                     "--family", "cutlass_tensorop_bf16_s16816gemm_bf16_*_tn_align9")
    line = one_error_line(result)
    assert result.exit_code == 1
    assert line.startswith("Error: --family 'cutlass_tensorop_bf16_s16816gemm_bf16_*_tn_align9' matches none of")
    assert "closest names: cutlass_tensorop_bf16_s16816gemm_bf16_" in line
    assert not (tmp_path / "d").exists()


def test_verify_groups_that_match_nothing(tmp_path):
    result = run_cli("verify", FIXTURE, "--out", tmp_path / "v", "--groups", "no_such_group*")
    assert result.exit_code == 1
    assert "no group of" in one_error_line(result) and "ptxds info" in result.output


# ---- 5. --limit counts rows, whole work items --------------------------------------------

def items(*rows):
    return [WorkItem(key=f"k{i}", group_id="g", label=f"item {i}", rows=r) for i, r in enumerate(rows)]


def test_limit_counts_rows_of_whole_items():
    assert [i.key for i in select_items(items(10, 10, 10), 25, 0)] == ["k0", "k1"]
    assert [i.key for i in select_items(items(10, 10, 10), 4, 0)] == ["k0"]  # the first item is kept
    assert [i.key for i in select_items(items(1, 1, 1, 1), 3, 0)] == ["k0", "k1", "k2"]
    assert select_items(items(1, 2), None, 0) == items(1, 2)
    sampled = select_items(items(*[3] * 10), 9, 7)
    assert len(sampled) == 3 and sampled == select_items(items(*[3] * 10), 9, 7)
    with pytest.raises(ValueError):
        select_items(items(1), 0, 0)


def test_limit_means_rows_for_every_source(tmp_path):
    """TVM items are a group's schedule search (10 rows each); --limit 20 is two of them, not
    twenty; the Triton suite's items are one row each."""
    tvm = pytest.importorskip("tvm")  # noqa: F841
    plan = plan_build("tvm", tmp_path / "t", BuildOptions(archs=["sm_80"], limit=20))
    assert plan.rows == 20 and len(plan.items) == 2
    plan = plan_build("triton", tmp_path / "x", BuildOptions(archs=["sm_80"], limit=20))
    assert plan.rows == 20 and len(plan.items) == 20


# ---- 6. messages that say what is wrong --------------------------------------------------

def test_info_on_a_folder_holding_datasets_names_them():
    result = run_cli("info", FIXTURE.parent)
    line = one_error_line(result)
    assert "is not a dataset folder" in line and str(FIXTURE) in line


def test_verify_on_a_non_dataset_says_so(tmp_path):
    result = run_cli("verify", FIXTURE.parent, "--out", tmp_path / "v")
    assert result.exit_code == 1
    assert "is not a dataset folder" in one_error_line(result)
    assert not (tmp_path / "v").exists()


def test_missing_shape_file_is_named(tmp_path):
    result = run_cli("build", "--source", "triton", "--out", tmp_path / "d", "--shapes", tmp_path / "mine.yaml")
    assert one_error_line(result) == (f"Error: shape file {tmp_path / 'mine.yaml'} not found; give an existing "
                                      "YAML/JSON file, or a built-in set: default, llm, sweep, crossource")


def test_malformed_yaml_names_line_and_column(tmp_path):
    bad = tmp_path / "shapes.yaml"
    bad.write_text("gemm:\n  - [16, 32, 64\n  - [1, 2, 3]\nsoftmax: [\n")
    result = run_cli("build", "--source", "triton", "--out", tmp_path / "d", "--shapes", bad)
    line = one_error_line(result)
    assert line.startswith(f"Error: {bad}:3:5: invalid YAML: expected"), line
    manifest = tmp_path / "m.yaml"
    manifest.write_text("problem:\n  problem_id: x\n  op: [vector_add\nmembers: []\n")
    result = run_cli("build", "--source", "ptx", "--manifest", manifest, "--out", tmp_path / "d")
    assert "line 4, column 8: invalid YAML" in one_error_line(result)
    assert not (tmp_path / "d").exists()


# ---- 8. report on an unverified dataset ---------------------------------------------------

def test_report_on_unverified_dataset_says_so_and_changes_nothing(unverified):
    pytest.importorskip("matplotlib")
    before = snapshot(unverified)
    result = run_cli("report", unverified)
    assert result.exit_code == 1
    assert "is not verified yet" in one_error_line(result)
    assert snapshot(unverified) == before


def test_info_on_unverified_dataset_says_pairs_come_with_verify(unverified):
    result = run_cli("info", unverified)
    assert result.exit_code == 0
    assert "no `pairs` config" in result.output


# ---- 9. --dry-run ----------------------------------------------------------------------------

def test_dry_run_lists_items_rows_and_time_and_writes_nothing(tmp_path):
    result = run_cli("build", "--source", "triton", "--arch", "sm_80", "--limit", "5", "--dry-run",
                     "--out", tmp_path / "d")
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 6 and all("row(s)" in line for line in lines[:5])
    assert lines[-1].startswith("triton: 5 work items to build (0 already done), 5 rows; about ")
    assert "CPU-s per row" in lines[-1]
    assert not (tmp_path / "d").exists()


# ---- 2. a killed build leaves no worker behind --------------------------------------------

def children_of(pid: int) -> set:
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.add(int(entry.name))
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_kill_9_of_a_build_leaves_no_worker(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "ptxds", "build", "--source", "triton", "--arch", "sm_80,sm_90a",
                             "--jobs", "2", "--silent", "--out", str(tmp_path / "d")], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    workers: set = set()
    while time.time() < deadline and len(workers) < 2:
        workers = children_of(proc.pid)
        time.sleep(0.2)
    assert len(workers) >= 2, "the build started no worker processes"
    time.sleep(1.0)  # workers compiling
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    deadline = time.time() + 5
    alive = set(workers)
    while time.time() < deadline and alive:
        alive = {pid for pid in alive if Path(f"/proc/{pid}").exists()
                 and (Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z")}
        time.sleep(0.2)
    for pid in alive:  # leave the machine clean before failing
        os.kill(pid, signal.SIGKILL)
    assert not alive, f"worker(s) {sorted(alive)} outlived the killed build by 5 s"
