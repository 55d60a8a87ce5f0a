"""Captured Inductor kernels checked against their own references (builders/inductor/capture.py,
reference_runtime.py): each kernel of a float32 BERT block, built as rows and run by Triton's
CPU interpreter on the verifier's draws with the rows' launches, lies within the verifier's
bound in every trial; a buffer a kernel computes and then overwrites in place (the LayerNorm
written over the embedding sum it normalises) is an output only; the error model gives an
integer made float no error (a mean's count) and bounds a quotient whose divisor overflows
float32 (SiLU as x / (1 + exp(-x))) by the quotient itself."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("triton")
torch = pytest.importorskip("torch")

from builders.inductor import reference_runtime as runtime  # noqa: E402
from builders.inductor.capture import capture_models  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
MODEL = "bert_block-float32-b1s16"
U = 2.0 ** -24

# Runs in a process of its own: the interpreter must be on before Triton and Inductor's
# helpers (@triton.jit functions the kernels call) are first imported.
INTERPRETED_CHECK = r"""
import importlib.util, json, math, sys
from pathlib import Path
import numpy as np, torch
import triton.language as tl
from dataset_spec.store.shards import read_records
from verify.runner import prepare_problem

class Libdevice:  # libdevice calls go to triton.language.math, which the interpreter evaluates
    def __getattr__(self, name):
        return getattr(tl.math, name)

def interpreted(folder, entry):
    spec = importlib.util.spec_from_file_location("k_" + folder.name, folder / "kernel.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.libdevice = Libdevice()
    return getattr(module, entry)

def run(kernel, row, storage):
    [launch] = row.launches
    buffers = {}
    for buffer in row.problem.buffers:  # outputs start as NaN: an element left unwritten fails
        buffers[buffer.name] = (torch.from_numpy(np.array(storage[buffer.name]).copy()) if buffer.name in storage
                                else torch.full(buffer.shape, math.nan, dtype=getattr(torch, buffer.dtype)))
    params = [p for p in kernel.arg_names if p not in row.variant]
    assert all(a.kind == "null" for a in launch.args[len(params):])  # the compiler's own scratch pointers
    args = [buffers[a.buffer] if a.kind == "buffer" else int(a.value) for a in launch.args[:len(params)]]
    kernel[launch.grid](*args, **{k: row.variant[k] for k in kernel.arg_names if k in row.variant})
    return buffers

root, rows_dir = Path(sys.argv[1]), sys.argv[2]
report = {}
for row in read_records(rows_dir):
    if row.group_id in report:
        continue  # one configuration per group: the binding and the reference are the group's
    model, name = row.group_id.split("/")[-2:]
    kernel = interpreted(root / model / name, row.launches[0].entry)
    prepared = prepare_problem(row.problem, row.group_id, salt="")
    problems = [prepared.refusal] if prepared.refusal else []
    for trial, reference in zip(prepared.trials, prepared.references):
        outputs = run(kernel, row, trial.host_storage())
        for spec in prepared.specs:
            got = outputs[spec.name].numpy().astype(np.float64).reshape(-1)
            want = np.asarray(reference[spec.name], dtype=np.float64).reshape(-1)
            bound = np.asarray(spec.bounds[trial.trial], dtype=np.float64).reshape(-1)
            finite = np.isfinite(want)
            where = f"{spec.name} trial {trial.trial} ({trial.kind})"
            if not np.array_equal(np.isfinite(got), finite):
                problems.append(f"{where}: finite where the reference is not, or the reverse")
            beyond = int((np.abs(got - want)[finite] > bound[finite]).sum())
            if beyond:
                problems.append(f"{where}: {beyond} of {int(finite.sum())} elements beyond the bound")
    report[row.group_id] = problems
print(json.dumps(report))
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    from click.testing import CliRunner
    from dataset_spec.store.shards import read_records
    from ptxds.cli import cli
    root = tmp_path_factory.mktemp("capture")
    [summary] = capture_models("bert_block:float32:1:16", root)
    out = tmp_path_factory.mktemp("rows")
    result = CliRunner().invoke(cli, ["build", "--source", "inductor", "--captured", str(root), "--out", str(out),
                                      "--arch", "sm_90a", "--jobs", "1", "--silent"])
    assert result.exit_code == 0, result.output
    assert {r.group_id for r in read_records(out)} == {f"inductor/{MODEL}/{k}" for k in summary["kernels"]}
    return root, summary, out


def test_a_buffer_the_kernel_computes_and_overwrites_is_no_input(built):
    root, summary, _ = built
    [name] = [k for k in summary["kernels"] if "embedding" in k]
    folder = root / MODEL / name
    roles = {b["name"]: b["role"] for b in json.loads((folder / "call.json").read_text())["problem"]["buffers"]}
    assert "in_out_ptr0" in (folder / "kernel.py").read_text()
    assert roles["in_out_ptr0"] == "out"  # the embedding sum's storage, never read before the kernel writes it
    assert "in_out_ptr0" not in json.loads((folder / "inductor.json").read_text())["graph_inputs"]


def test_every_kernel_run_by_the_interpreter_lies_within_the_bound(built):
    root, summary, rows_dir = built
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", INTERPRETED_CHECK, str(root), str(rows_dir)], env=env,
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(report) == {f"inductor/{MODEL}/{k}" for k in summary["kernels"]}
    assert {group: problems for group, problems in report.items() if problems} == {}


def _tracked(fn, *values):
    tracker = runtime.ErrorTracker()
    with torch.no_grad(), tracker:
        out = fn(*values)
    return out, tracker.error(out)


def test_a_mean_by_an_integer_count_carries_the_sums_error_only():
    """Inductor's IR divides a sum by its count made float (full(64, int64) -> _to_copy):
    the count is exact, so the mean's error is the sum's over 64, not the mean itself."""
    aten = torch.ops.aten
    x = torch.from_numpy(np.random.default_rng(0).standard_normal((8, 64)) + 3.0)

    def mean(x):
        count = aten._to_copy.default(aten.full.default([], 64, dtype=torch.int64), dtype=torch.float32)
        return aten.div.Tensor(aten.sum.dim_IntList(x, [1]), count)

    out, error = _tracked(mean, x)
    expected = runtime.accumulation(64) * x.abs().sum(1) / 64 + 4 * U * out.abs()
    np.testing.assert_allclose(error.numpy(), expected.numpy(), rtol=1e-12)
    assert (error < 50 * U * out.abs()).all()
    # an integer beyond 2^24 rounds once on its way to float32
    _, big_error = _tracked(lambda n: aten._to_copy.default(n, dtype=torch.float32),
                            torch.tensor([3, 2 ** 24 + 1], dtype=torch.int64))
    assert big_error.tolist() == [0.0, U * (2 ** 24 + 1)]


def test_silu_whose_exp_overflows_float32_is_bounded_by_its_value():
    """x / (1 + exp(-x)) (SiLU as Inductor writes it) is -0 in float32 below x = -88.7, where
    exp(-x) overflows, and x e^x in float64: the bound covers that and no more."""
    aten = torch.ops.aten
    x = torch.tensor([-100.0, -88.0, -1.0, 2.0, 30.0], dtype=torch.float64)

    def silu(x):
        return aten.div.Tensor(x, aten.add.Tensor(aten.exp.default(aten.neg.default(x)), 1.0))

    out, error = _tracked(silu, x)
    float32 = (x.float() / (torch.exp(-x.float()) + 1)).double()
    assert float32[0].item() == 0.0 and out[0].item() != 0.0
    assert ((float32 - out).abs() <= error + U * out.abs()).all()
    assert error[0] <= 1.01 * out[0].abs()  # the value itself, not an infinite bound
    assert (error[1:] < 200 * U * out[1:].abs()).all()  # elsewhere the first-order bound
