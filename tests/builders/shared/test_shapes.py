"""Tests for shape sets (``ptxds build --shapes``): the default set reproduces earlier builds
exactly, other sets make one group per size, CUTLASS compiles each kernel once for every
size, user shape files are checked with one-line errors, and sizes a kernel cannot run are
``not_applicable`` rows."""
from __future__ import annotations

import json
import re

import pytest

from builders.shapes import BUILTIN, load_shape_set, shape_label
from dataset_spec.model import BUILD_STATUSES, SpecError


# --------------------------------------------------------------------------- shape files

def write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_builtin_names_and_file_forms(tmp_path):
    assert set(BUILTIN) == {"default", "llm", "sweep", "crossource"}
    assert load_shape_set(None).is_default and load_shape_set("default").is_default
    yaml_file = write(tmp_path, "mine.yaml", "gemm: [[64, 32, 16], {M: 8, N: 16, K: 32}]\n"
                                             "rows: [[4, 8]]\nsoftmax: [[2, 3]]\nelementwise: [7]\n")
    shapes = load_shape_set(yaml_file)
    assert shapes.name == "mine" and shapes.exact and not shapes.is_default
    assert shapes.gemm == ((64, 32, 16), (8, 16, 32)) and shapes.elementwise == (7,)
    assert shapes.sizes_for("softmax") == ((2, 3),) and shapes.sizes_for("rmsnorm") == ((4, 8),)
    json_file = write(tmp_path, "j.json", json.dumps({"name": "j", "elementwise": [5, 6]}))
    assert load_shape_set(json_file).sizes_for("square") == (5, 6)
    assert shape_label("gemm", (1, 2, 3)) == "M1xN2xK3" and shape_label("elementwise", 9) == "n9"


@pytest.mark.parametrize("text, message", [
    ("gemm: [[1, 2]]", "gemm[0] must be 3 positive int(s)"),
    ("gemm: [[1, 2, 0]]", "gemm[0] must be 3 positive int(s)"),
    ("rows: [{M: 1}]", "rows[0] must have keys M, N"),
    ("gemm: 4096", "gemm must be a list of sizes"),
    ("shapez: [[1, 2, 3]]", "unknown key 'shapez'"),
    ("- [1, 2, 3]", "a shape file holds a mapping"),
    ("gemm: [[1, 2, 3]", "bad.yaml:2:1: invalid YAML: expected"),
    ("name: empty", "names no sizes"),
])
def test_bad_shape_files_give_one_line_errors(tmp_path, text, message):
    path = write(tmp_path, "bad.yaml", text + "\n")
    with pytest.raises(SpecError, match=re.escape(message)) as err:
        load_shape_set(path)
    assert "\n" not in str(err.value) and "bad.yaml" in str(err.value)


def test_unknown_set_name_is_one_line():
    with pytest.raises(SpecError, match="unknown shape set 'huge': use default, llm, sweep, crossource or a YAML/JSON file"):
        load_shape_set("huge")


def test_cli_reports_bad_shapes_in_one_line(tmp_path):
    from click.testing import CliRunner
    from ptxds.cli import cli
    result = CliRunner().invoke(cli, ["build", "--source", "triton", "--out", str(tmp_path / "o"),
                                      "--shapes", "nope", "--silent"])
    assert result.exit_code != 0
    assert "Error: unknown shape set 'nope'" in result.output and len(result.output.strip().splitlines()) == 1
    result = CliRunner().invoke(cli, ["build", "--source", "mirage", "--out", str(tmp_path / "o"),
                                      "--shapes", "llm", "--silent"])
    assert result.exit_code != 0 and "--shapes" in result.output


def test_not_applicable_is_a_build_status():
    from verify.runner import PASS_THROUGH
    assert "not_applicable" in BUILD_STATUSES and "not_applicable" in PASS_THROUGH


def test_group_shape_of_sources_without_a_shape_param():
    import json
    from builders.shapes import group_shape
    call = {"params": {}, "buffers": [{"name": "x", "shape": [2048, 4096]}, {"name": "w", "shape": [4096]}]}
    # a call description names its sizes in the group id; the first such part wins
    assert group_shape("triton-jit/liger/dyt_backward/bfloat16/M2048xN4096/P132xBN1024",
                       json.dumps(call)) == "M2048xN4096"
    # an Inductor kernel names none: its largest buffer's shape
    kernel = {"params": {}, "buffers": [{"name": "in_ptr0", "shape": [1, 64, 512]}, {"name": "in_ptr1", "shape": [512]}]}
    assert group_shape("inductor/bert-float16-b1s64/triton_per_fused_add_0", json.dumps(kernel)) == "1x64x512"
    assert group_shape("mirage/x", json.dumps({"params": {}, "buffers": []})) == "-"
    assert group_shape("triton/softmax/n4096", None) == "n4096"
