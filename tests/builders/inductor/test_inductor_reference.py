"""Captured references a verifier can run (builders/inductor/portable_ops.py, capture.py's
``portable_graph`` and ``input_domain``): every op a reference calls exists in a plain
``import torch`` of the minimum torch, Inductor's prims are decomposed at capture, a build
refuses a reference that still calls one, and each kernel's input domain keeps its float16
outputs finite, so a float32 evaluation of every captured graph passes every trial the
verifier draws (wide, edge and stress included)."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("triton")
torch = pytest.importorskip("torch")

from builders.inductor.builder import CaptureError, check_kernel_folder  # noqa: E402
from builders.inductor.capture import capture_models  # noqa: E402
from builders.inductor.portable_ops import MINIMUM_TORCH, MINIMUM_TORCH_OPS, missing_ops  # noqa: E402
from dataset_spec.model import Problem  # noqa: E402
from dataset_spec.ops import get_op  # noqa: E402
from verify.trials.inputs import make_trial_inputs  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    root = tmp_path_factory.mktemp("capture")
    summaries = capture_models("gpt2_block:float16:1:16,llama_layer:float16:1:16", root)
    return root, {s["model"]: s for s in summaries}


def _folders(root):
    return sorted(p.parent for p in root.glob("*/*/call.json"))


def _problem(folder):
    call = json.loads((folder / "call.json").read_text())
    params = dict(call["problem"]["params"], reference_source=(folder / "reference.py").read_text())
    return Problem.from_json(json.dumps(dict(call["problem"], params=params)))


def test_the_minimum_torch_lists_the_ops_of_a_plain_import():
    assert MINIMUM_TORCH == "2.11"
    for op in ("aten::amax.default", "aten::add.Tensor", "aten::sum.dim_IntList", "prims::convert_element_type.default",
               "prims::iota.default"):
        assert op in MINIMUM_TORCH_OPS
    # Inductor's prims exist only once torch._inductor is imported
    assert "prims::prepare_softmax_online.default" not in MINIMUM_TORCH_OPS
    assert "prims::fma.default" not in MINIMUM_TORCH_OPS


def test_softmax_reference_is_decomposed_into_portable_ops(captured):
    root, summaries = captured
    [name] = [k for k in summaries["gpt2_block-float16-b1s16"]["kernels"] if "softmax" in k]
    folder = root / "gpt2_block-float16-b1s16" / name
    info = json.loads((folder / "inductor.json").read_text())
    assert "prims.prepare_softmax_online.default" in info["graph_ops"]
    assert info["decomposed"] == ["prims.prepare_softmax_online.default"]
    assert {"aten.amax.default", "aten.exp.default", "aten.sum.dim_IntList"} <= set(info["aten_ops"])
    assert "ops.prims.prepare_softmax_online" not in (folder / "reference.py").read_text()
    for folder in _folders(root):
        assert missing_ops((folder / "reference.py").read_text()) == [], folder


def test_every_reference_runs_where_inductor_was_never_imported(captured):
    """The verifier's process: plain torch and the custom op's loader; Inductor's prims
    (torch._inductor.inductor_prims) are never loaded there."""
    root, _ = captured
    script = (
        "import json, sys, numpy as np\n"
        "from pathlib import Path\n"
        "from dataset_spec.model import Problem\n"
        "from dataset_spec.ops import get_op\n"
        "for folder in map(Path, sys.argv[1:]):\n"
        "    call = json.loads((folder / 'call.json').read_text())\n"
        "    params = dict(call['problem']['params'], reference_source=(folder / 'reference.py').read_text())\n"
        "    problem = Problem.from_json(json.dumps(dict(call['problem'], params=params)))\n"
        "    rng = np.random.default_rng(0)\n"
        "    inputs = {b.name: rng.standard_normal(b.shape) for b in problem.buffers if b.role != 'out'}\n"
        "    out = get_op('custom').reference(inputs, problem)\n"
        "    assert all(np.isfinite(v).any() for v in out.values()), folder\n"
        "import torch\n"
        "assert not hasattr(torch.ops.prims, 'prepare_softmax_online'), 'Inductor prims were loaded'\n"
        "print('ok', len(sys.argv) - 1)\n")
    folders = [str(f) for f in _folders(root)]
    done = subprocess.run([sys.executable, "-c", script, *folders], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == f"ok {len(folders)}"


def test_build_refuses_a_reference_calling_an_op_the_minimum_torch_lacks(captured, tmp_path):
    root, summaries = captured
    model = "gpt2_block-float16-b1s16"
    copy = tmp_path / "cap"
    shutil.copytree(root / model, copy / model)
    [folder] = [copy / model / k for k in summaries[model]["kernels"] if "softmax" in k]
    check_kernel_folder(folder)
    reference = folder / "reference.py"
    reference.write_text(reference.read_text().replace(
        "torch.ops.aten.amax.default(", "torch.ops.prims.prepare_softmax_online.default(", 1))
    with pytest.raises(CaptureError, match=r"calls prims\.prepare_softmax_online\.default, which torch 2\.11 "
                                           r"\(the oldest a verifier may run\) lacks; capture it again"):
        check_kernel_folder(folder)
    summary = copy / model / "capture.json"
    summary.write_text(json.dumps(dict(json.loads(summary.read_text()), capture_version=1)))
    with pytest.raises(CaptureError, match="capture version 1 predates portable references"):
        check_kernel_folder(folder)


def test_silu_times_up_gets_a_domain_whose_float16_output_stays_finite(captured):
    """Inputs of 1024 make silu(a) * b about 1e6, which float16 stores as inf while the float64
    reference stays finite: the capture narrows that kernel's domain, not a norm's."""
    root, summaries = captured
    model = "llama_layer-float16-b1s16"
    [name] = [k for k in summaries[model]["kernels"] if k.endswith("mul_silu_3")]
    problem = _problem(root / model / name)
    ranges = problem.params["input_range"]
    [hi] = {hi for _, hi in ranges.values()}
    assert 64 <= hi < 1024 and hi * hi <= 65504 / 2
    full = {b.name: np.full(b.shape, 1024.0) for b in problem.buffers if b.role != "out"}
    [out] = get_op("custom").reference(full, problem).values()
    assert np.abs(out).max() > 65504  # the default domain would overflow
    norms = [_problem(f) for f in _folders(root) if "rsqrt" in f.name or "layer_norm" in f.name]
    assert len(norms) >= 4  # a normalised row stays below sqrt(n) |weight|: the default domain
    assert all(hi == 1024.0 for p in norms for _, hi in p.params["input_range"].values())


def test_float32_evaluation_passes_every_trial_the_verifier_draws(captured):
    check_float32_passes_every_trial(captured[0])


def check_float32_passes_every_trial(root):
    """A correct implementation as Inductor writes one (every op of the graph in float32, the
    result stored in the buffer's dtype) lies within the bound and stays finite where the
    reference is, on the verifier's own draws."""
    import importlib.util
    op = get_op("custom")
    for folder in _folders(root):
        problem = _problem(folder)
        spec = importlib.util.spec_from_file_location("ref_" + folder.name, folder / "reference.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for trial in range(len(problem.trial_kinds)):
            drawn = make_trial_inputs(problem, f"inductor/{problem.problem_id}", trial)
            reference = op.reference(drawn.values, problem)
            bounds = op.bounds(drawn.values, problem, reference)
            values = [v.to(torch.float32) if v.is_floating_point() else v for v in module._graph_inputs(drawn.values)]
            with torch.no_grad(), _Float32():
                outs = module._outputs(module.graph(*values))
            for buffer, (value, size, stride, numel) in outs.items():
                kept = drawn.values[buffer] if problem.buffer(buffer).role == "inout" else None  # in place
                storage = module._storage(value.to(torch.float64), size, stride, numel, kept).reshape(
                    reference[buffer].shape)
                stored = _stored(storage, problem.buffer(buffer).dtype)
                where = f"{folder.name}.{buffer} trial {trial} ({drawn.kind})"
                assert (np.isfinite(stored) == np.isfinite(reference[buffer])).all(), where
                finite = np.isfinite(reference[buffer])
                error = np.abs(stored - reference[buffer])[finite]
                assert (error <= bounds[buffer][finite]).all(), f"{where}: {error.max()} beyond the bound"


def _stored(values, dtype):
    """float64 ``values`` rounded to the buffer's dtype (bfloat16 through torch: numpy has none)."""
    if dtype == "bfloat16":
        return torch.from_numpy(values).to(torch.bfloat16).to(torch.float64).numpy()
    with np.errstate(over="ignore"):
        return values.astype(dtype).astype(np.float64)


def _float32(value):
    if isinstance(value, torch.dtype) and value.is_floating_point:
        return torch.float32
    if isinstance(value, torch.device):
        return torch.device("cpu")
    return type(value)(_float32(v) for v in value) if isinstance(value, (list, tuple)) else value


class _Float32(torch.utils._python_dispatch.TorchDispatchMode):
    """Every float dtype an op names is float32, every device the CPU (Inductor computes in
    float32 between its loads and stores)."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*_float32(tuple(args)), **{k: _float32(v) for k, v in (kwargs or {}).items()})


def test_attention_is_traced_as_the_cuda_build_dispatches_it(captured):
    """Llama's SDPA is FlashAttention's CUDA op (an extern call), not the CPU's fused op, and
    the rotary kernel that writes its query and key in flash's layout is captured."""
    root, summaries = captured
    llama = summaries["llama_layer-float16-b1s16"]
    assert "_scaled_dot_product_flash_attention" in llama["aten_fallbacks"]
    assert not any("for_cpu" in k for k in llama["kernels"] + list(llama["skipped"]))
    assert llama["skipped"] == {}
    [rotary] = [k for k in llama["kernels"] if "flash_attention" in k and "cat" in k]
    info = json.loads((root / "llama_layer-float16-b1s16" / rotary / "inductor.json").read_text())
    assert len(info["out_nodes"]) == 2 and "aten.cat.default" in info["aten_ops"]


def test_sdpa_backend_follows_the_cuda_dispatch_order():
    from builders.inductor.cuda_attention import sdpa_backend
    q = torch.zeros(2, 4, 16, 64, dtype=torch.float16)
    assert sdpa_backend(q, q, q) == "flash"
    assert sdpa_backend(q, q, q, attn_mask=torch.ones(16, 16, dtype=torch.bool)) == "efficient"
    assert sdpa_backend(q.float(), q.float(), q.float()) == "efficient"
    odd = torch.zeros(2, 4, 16, 60, dtype=torch.float32)
    assert sdpa_backend(odd, odd, odd) == "efficient"  # 60 % 4 == 0
    assert sdpa_backend(odd[..., :30], odd[..., :30], odd[..., :30]) == "math"  # 30 % 4 != 0
    big = torch.zeros(1, 1, 8, 512, dtype=torch.float16)
    assert sdpa_backend(big, big, big) == "efficient"  # flash takes head sizes up to 256
