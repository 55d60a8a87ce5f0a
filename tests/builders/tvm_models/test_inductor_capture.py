"""``ptxds build --source tvm-models --inductor-capture DIR``: TVM members of a captured
Inductor kernel's own function, which ``ptxds merge`` groups with the kernel's rows (CPU only:
capture, TVM's fusion, nvcc and ptxas, Triton's compile, the merge)."""
from __future__ import annotations

import shutil

import pytest

pytest.importorskip("tvm")
pytest.importorskip("triton")

MODEL = "gpt2_block:float32:1:16"


@pytest.fixture(scope="module")
def gelu_capture(tmp_path_factory):
    """A capture folder holding GPT-2's GELU kernel alone (Inductor writes it in place)."""
    from builders.inductor.capture import capture_models
    full = tmp_path_factory.mktemp("capture")
    [summary] = capture_models(MODEL, full)
    kernel = next(k for k in summary["kernels"] if k.startswith("triton_poi_") and ("tanh" in k or "gelu" in k))
    root = tmp_path_factory.mktemp("one_kernel")
    shutil.copytree(full / summary["model"] / kernel, root / summary["model"] / kernel)
    shutil.copy(full / summary["model"] / "capture.json", root / summary["model"] / "capture.json")
    return root, summary["model"], kernel


def _build(args, out):
    from click.testing import CliRunner

    from ptxds.cli import cli
    result = CliRunner().invoke(cli, ["build", *args, "--out", str(out), "--arch", "sm_90a", "--jobs", "1", "--silent"])
    assert result.exit_code == 0, result.output


def test_tvm_members_of_a_captured_kernel_merge_into_its_group(gelu_capture, tmp_path):
    from click.testing import CliRunner

    from dataset_spec.store.shards import read_records
    from ptxds.cli import cli
    root, model, kernel = gelu_capture
    _build(["--source", "tvm-models", "--inductor-capture", str(root), "--schedules", "1"], tmp_path / "tvm")
    _build(["--source", "inductor", "--captured", str(root)], tmp_path / "inductor")
    tvm_rows = read_records(tmp_path / "tvm")
    assert tvm_rows and all(r.status == "built" and r.group_id == f"tvm-models/{model}/{kernel}" for r in tvm_rows)
    inout = [b.name for b in tvm_rows[0].problem.buffers if b.role == "inout"]
    assert inout, "the GELU kernel writes its input in place"
    for row in tvm_rows:
        bound = [a.buffer for launch in row.launches for a in launch.args if a.kind == "buffer"]
        assert set(bound) <= {b.name for b in row.buffers()} and bound.count(inout[0]) == 2  # read, then written
        assert row.provenance["inductor_kernel"] == kernel
        assert "def graph(" not in row.problem.params["reference_source"]  # TVM's TIR, not the FX graph

    result = CliRunner().invoke(cli, ["merge", str(tmp_path / "inductor"), str(tmp_path / "tvm"),
                                      "--out", str(tmp_path / "merged"), "--silent"])
    assert result.exit_code == 0, result.output
    merged = read_records(tmp_path / "merged")
    groups = {}
    for row in merged:
        groups.setdefault(row.group_id, set()).add(row.source)
    [(group, sources)] = groups.items()
    assert group.startswith("function/fused/float32/i") and sources == {"inductor", "tvm-models"}
    assert len({r.problem.digest() for r in merged}) == 1


def test_models_and_a_capture_folder_exclude_each_other(gelu_capture, tmp_path):
    from click.testing import CliRunner

    from ptxds.cli import cli
    root, _, _ = gelu_capture
    result = CliRunner().invoke(cli, ["build", "--source", "tvm-models", "--models", "gpt2_block",
                                      "--inductor-capture", str(root), "--out", str(tmp_path / "d")])
    assert result.exit_code == 1 and "exclude each other" in result.output
