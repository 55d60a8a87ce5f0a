"""The inductor source on CPU: Inductor writes a GPT-2 block's CUDA Triton kernels without a
GPU, each kernel's float64 reference (its post-grad FX subgraph) agrees with torch's own ops,
a float32 evaluation of the same graph lies within the reference's error bound, and the
kernels build to PTX as rows of source inductor."""
import json

import numpy as np
import pytest

pytest.importorskip("triton")
torch = pytest.importorskip("torch")

from builders.inductor.capture import capture_models  # noqa: E402
from dataset_spec.model import Problem  # noqa: E402
from dataset_spec.ops import get_op  # noqa: E402


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    root = tmp_path_factory.mktemp("capture")
    [summary] = capture_models("gpt2_block:float16:1:16", root)
    return root, summary


def _problem(folder):
    call = json.loads((folder / "call.json").read_text())
    params = dict(call["problem"]["params"], reference_source=(folder / "reference.py").read_text())
    return Problem.from_json(json.dumps(dict(call["problem"], params=params)))


def _inputs(problem, seed=0):
    rng = np.random.default_rng(seed)
    return {b.name: rng.standard_normal(b.shape) for b in problem.buffers if b.role in ("in", "inout")}


def test_capture_finds_every_kernel_of_the_block(captured):
    root, summary = captured
    assert summary["skipped"] == {}
    assert len(summary["kernels"]) >= 6
    assert {"addmm", "bmm"} <= set(summary["extern_kernels"])  # the GEMMs stay cuBLAS calls
    names = " ".join(summary["kernels"])
    assert "native_layer_norm" in names and "gelu" in names and "softmax" in names


def test_layer_norm_reference_is_torchs_layer_norm(captured):
    root, summary = captured
    [name] = [k for k in summary["kernels"] if k.endswith("fused_native_layer_norm_0")]
    folder = root / summary["model"] / name
    problem = _problem(folder)
    inputs = _inputs(problem)
    graph_inputs = json.loads((folder / "inductor.json").read_text())["graph_inputs"]
    x = [b for b, role in graph_inputs.items() if role == "activation"]
    w, b = ([n for n, role in graph_inputs.items() if role == f"weight:ln_1.{p}"][0] for p in ("weight", "bias"))
    [out] = [b.name for b in problem.buffers if b.role == "out"]
    expected = torch.nn.functional.layer_norm(torch.from_numpy(inputs[x[0]]), (inputs[w].shape[-1],),
                                              torch.from_numpy(inputs[w]), torch.from_numpy(inputs[b]), 1e-5)
    got = get_op("custom").reference(inputs, problem)[out]
    np.testing.assert_allclose(got, expected.numpy().reshape(got.shape), rtol=1e-12, atol=1e-12)


def test_float32_evaluation_lies_within_the_bound(captured):
    """The same graph in float32 on the CPU is a correct implementation: it must pass, and a 1%
    error must not."""
    import importlib.util
    root, summary = captured
    op = get_op("custom")
    for name in summary["kernels"]:
        folder = root / summary["model"] / name
        problem = _problem(folder)
        inputs = _inputs(problem, seed=1)
        reference = op.reference(inputs, problem)
        bounds = op.bounds(inputs, problem, reference)
        spec = importlib.util.spec_from_file_location("ref_" + name, folder / "reference.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        values = [v.to(torch.float32) if v.is_floating_point() else v for v in module._graph_inputs(inputs)]
        with torch.no_grad(), _cuda_on_cpu(module):
            outs = module._outputs(module.graph(*values))
        for buffer, (value, size, stride, numel) in outs.items():
            storage = module._storage(value.to(torch.float64), size, stride, numel).reshape(reference[buffer].shape)
            rounded = storage.astype(problem.buffer(buffer).dtype).astype(np.float64)
            error = np.abs(rounded - reference[buffer])
            assert (error <= bounds[buffer]).all(), f"{name}.{buffer}: {error.max()} beyond the bound"
            wrong = reference[buffer] * 1.01
            big = np.abs(reference[buffer]) > 1e-2
            assert (np.abs(wrong - reference[buffer]) > bounds[buffer])[big].mean() > 0.9, name


def _cuda_on_cpu(module):
    from torch.utils._python_dispatch import TorchDispatchMode

    class CudaOnCpu(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            cpu = lambda v: torch.device("cpu") if isinstance(v, torch.device) else v  # noqa: E731
            return func(*[cpu(a) for a in args], **{k: cpu(v) for k, v in (kwargs or {}).items()})

    return CudaOnCpu()


def test_build_writes_runnable_inductor_rows(captured, tmp_path):
    from click.testing import CliRunner
    from dataset_spec.store.shards import read_records
    from ptxds.cli import cli
    root, summary = captured
    out = tmp_path / "data"
    result = CliRunner().invoke(cli, ["build", "--source", "inductor", "--captured", str(root), "--out", str(out),
                                      "--arch", "sm_90a", "--limit", "3", "--jobs", "1", "--silent"])
    assert result.exit_code == 0, result.output
    rows = read_records(out)
    assert rows and all(r.source == "inductor" and r.status == "built" for r in rows)
    for row in rows:
        assert row.group_id.startswith(f"inductor/{summary['model']}/triton_")
        assert ".entry " + row.name in row.ptx
        assert row.problem.op == "custom" and "def graph(" in row.problem.params["reference_source"]
        assert row.provenance["aten_ops"] and row.provenance["model"] == summary["model"]


def test_build_without_a_capture_folder_says_how_to_make_one(tmp_path):
    from click.testing import CliRunner
    from ptxds.cli import cli
    result = CliRunner().invoke(cli, ["build", "--source", "inductor", "--captured", str(tmp_path),
                                      "--out", str(tmp_path / "d")])
    assert result.exit_code == 1
    assert "no captured kernels" in result.output and "ptxds capture --source inductor" in result.output
