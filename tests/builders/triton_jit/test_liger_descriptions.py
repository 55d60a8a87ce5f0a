"""Liger-Kernel 0.8.5's call descriptions (examples/liger): every one loads (kernel imported,
problem checked against its op, every member's constexprs, arguments and grid resolved,
custom references imported), and a representative few build end to end on CPU: RMSNorm's
row and block kernels into ONE group, cross entropy with ignored labels (n_non_ignore a
constant the trials keep), and a kernel with its own reference shipped in the rows. The
registry's pieces these need are checked on their own: labels with exactly
``ignored_rows`` ignore_index rows in every trial kind, and RoPE's inverse rotation."""
from pathlib import Path

import numpy as np
import pytest

from builders.base import BuildOptions
from dataset_spec.store.dataset import Dataset
from dataset_spec.model import Buffer, Problem
from dataset_spec.ops import check_problem, get_op

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "liger"
DESCRIPTIONS = sorted(EXAMPLES.glob("*.yaml"))


def _build(tmp_path, *names, arch="sm_90a"):
    from ptxds.pipeline import run_build
    for name in names:
        run_build("triton-jit", tmp_path, BuildOptions(archs=[arch], extra={"call": str(EXAMPLES / name)}),
                  jobs=1, progress=False)
    return Dataset.open(tmp_path).records()


def test_there_are_twenty_liger_kernels():
    kernels = {line.split(":", 1)[1].strip() for path in DESCRIPTIONS for line in path.read_text().splitlines()
               if line.startswith("kernel:")}
    assert len(kernels) >= 20, sorted(kernels)


@pytest.mark.parametrize("path", DESCRIPTIONS, ids=lambda p: p.stem)
def test_every_liger_description_loads(path):
    pytest.importorskip("liger_kernel")
    pytest.importorskip("triton")
    from builders.triton_jit import load_description
    description = load_description(path)
    check_problem(description.problem)
    assert description.problem.problem_id.startswith("liger/")
    if description.problem.op == "custom":  # a single-file reference travels inside the rows
        assert "def " in description.problem.params["reference_source"]


def test_rms_norm_row_and_block_kernels_fill_one_group(tmp_path):
    pytest.importorskip("liger_kernel")
    rows = _build(tmp_path, "rms_norm_qk_row.yaml", "rms_norm_qk_block.yaml")
    assert all(r.status == "built" for r in rows), [r.status_message for r in rows]
    assert {r.group_id for r in rows} == {"triton-jit/liger/rms_norm/bfloat16/M32768xN128"}
    assert sorted(r.name for r in rows) == ["_block_rms_norm_forward_kernel"] * 3 + ["_rms_norm_forward_kernel"]
    grids = {r.launches[0].grid for r in rows if r.name.startswith("_block")}
    assert grids == {(2048, 1, 1), (4096, 1, 1), (1024, 1, 1)}  # cdiv(32768, BLOCK_ROW) for 16, 8, 32
    # a second build of the same descriptions adds nothing: each kernel's items have their own keys
    assert len(_build(tmp_path, "rms_norm_qk_block.yaml")) == 4


def test_cross_entropy_with_ignored_labels_builds(tmp_path):
    pytest.importorskip("liger_kernel")
    [row] = _build(tmp_path, "cross_entropy.yaml")
    assert row.status == "built", row.status_message
    scalars = {str(a.value) for a in row.launches[0].args if a.kind == "scalar"}
    assert {"192", "128256", "-100"} <= scalars  # n_non_ignore = 256 - ignored_rows, V, ignore_index
    assert row.problem.buffer("loss").init.kind == "zeros"


def test_custom_reference_row_runs_its_reference(tmp_path):
    pytest.importorskip("liger_kernel")
    [row] = _build(tmp_path, "kl_div_backward.yaml", arch="sm_80")
    assert row.status == "built" and row.arch == "sm_80", row.status_message
    rng = np.random.default_rng(0)
    y_true = rng.random(tuple(row.problem.buffer("y_true").shape))
    out = get_op("custom").reference({"y_true": y_true}, row.problem)
    assert np.array_equal(out["grad"], -y_true)


def _cross_entropy(ignored_rows, rows=64, vocab=1000):
    return Problem("ce", "cross_entropy", [
        Buffer("x", "float32", (rows, vocab), "inout"), Buffer("target", "int64", (rows,)),
        Buffer("loss", "float32", (rows,), "out")], params={"reduction": "mean", "ignored_rows": ignored_rows})


def test_cross_entropy_trials_ignore_exactly_the_declared_rows():
    from verify.trials.inputs import make_trial_inputs
    problem = _cross_entropy(16)
    for trial in range(5):  # every trial kind
        inputs = make_trial_inputs(problem, "g", trial)
        labels = inputs.values["target"]
        assert (labels == -100).sum() == 16
        kept = labels[labels != -100]
        assert kept.min() >= 0 and kept.max() < 1000
        loss = get_op("cross_entropy").reference(inputs.values, problem)["loss"]
        assert np.all(loss[labels == -100] == 0) and np.all(loss[labels != -100] != 0)
    plain = make_trial_inputs(_cross_entropy(0), "g", 0).values["target"]
    assert not (plain == -100).any()
    with pytest.raises(Exception, match="ignored_rows must be an integer from 0 to 63"):
        make_trial_inputs(_cross_entropy(64), "g", 0)


def test_rope_inverse_undoes_the_rotation():
    shapes = {"q": (1, 8, 4, 16), "k": (1, 8, 2, 16), "cos": (1, 8, 16), "sin": (1, 8, 16)}
    rng = np.random.default_rng(1)
    angle = rng.uniform(0, 3, (1, 8, 8))
    values = {"q": rng.normal(size=shapes["q"]), "k": rng.normal(size=shapes["k"]),
              "cos": np.concatenate([np.cos(angle)] * 2, -1), "sin": np.concatenate([np.sin(angle)] * 2, -1)}

    def problem(inverse):
        return Problem("rope", "rope", [Buffer(n, "float32", s, "inout" if n in "qk" else "in")
                                        for n, s in shapes.items()], params={"inverse": inverse})
    forward = get_op("rope").reference(values, problem(False))
    back = get_op("rope").reference(dict(values, **forward), problem(True))
    assert np.allclose(back["q"], values["q"]) and np.allclose(back["k"], values["k"])
    assert not np.allclose(forward["q"], values["q"])
