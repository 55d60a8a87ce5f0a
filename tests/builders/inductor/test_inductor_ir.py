"""References from Inductor's IR (builders/inductor/ir_reference.py): where a kernel's buffer is
no FX node's value (a split LayerNorm's partial Welford statistics in Whisper's encoder), the
kernel's reference is the IR of the buffers it computes; on kernels that have both, the IR
reference and the FX subgraph agree in float64; and a float32 evaluation of every IR
reference passes every trial the verifier draws."""
import json

import numpy as np
import pytest

pytest.importorskip("triton")
torch = pytest.importorskip("torch")

from builders.inductor.capture import (_constexprs, _params, capture_models, describe_from_graph,  # noqa: E402
                                       describe_from_ir, inductor_kernels, reference_module, trace_model)
from builders.inductor.models import ModelSpec  # noqa: E402
from dataset_spec.model import Problem  # noqa: E402
from test_inductor_reference import check_float32_passes_every_trial  # noqa: E402


def _problem(kernel, described, source):
    buffers = [{k: v for k, v in b.items() if k != "graph_role"} for b in described["buffers"]]
    return Problem.from_json(json.dumps({"problem_id": kernel, "op": "custom", "buffers": buffers, "params": {
        "reference": "reference:reference", "reduction_length": 1, "reference_source": source}}))


def _evaluate(kernel, described, storages):
    source = reference_module(kernel, "test", described)
    module = {}
    exec(compile(source, "<reference>", "exec"), module)
    problem = _problem(kernel, described, source)
    inputs = {b.name: storages[b.name][:int(np.prod(b.shape))].reshape(b.shape)
              for b in problem.buffers if b.role in ("in", "inout")}
    return {name: value.reshape(-1) for name, value in module["reference"](inputs, problem).items()}


def test_ir_and_fx_references_agree_on_every_kernel_of_a_gpt2_block():
    gm, example, roles = trace_model(ModelSpec.parse("gpt2_block:float32:1:16"))
    recorder = inductor_kernels(gm, example)
    graph_roles = dict(zip([n.name for n in recorder.graph.module.graph.nodes if n.op == "placeholder"],
                           roles.values()))
    rng = np.random.default_rng(0)
    compared = 0
    for name, call in recorder.calls.items():
        source = recorder.sources[name]
        call.params = [p for p in _params(source, name) if p not in _constexprs(source, name)]
        fx = describe_from_graph(recorder.graph, call, graph_roles)
        ir = describe_from_ir(recorder.graph, call, graph_roles, recorder.nodes[name])
        assert ir["reference"] == "ir" and set(ir["outputs"]) == set(fx["outputs"])
        storages = {b["name"]: rng.standard_normal(int(np.prod(b["shape"]))) for b in ir["buffers"]}
        from_fx, from_ir = _evaluate(name, fx, storages), _evaluate(name, ir, storages)
        for buffer, value in from_fx.items():
            np.testing.assert_allclose(from_ir[buffer], value, rtol=1e-9, atol=1e-9, err_msg=f"{name}.{buffer}")
        compared += 1
    assert compared >= 6


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    root = tmp_path_factory.mktemp("capture")
    [summary] = capture_models("whisper_encoder:float16:1:16", root)
    return root, summary


def test_split_layer_norm_kernels_get_ir_references(captured):
    root, summary = captured
    assert summary["skipped"] == {}
    infos = {k: json.loads((root / summary["model"] / k / "inductor.json").read_text()) for k in summary["kernels"]}
    from_ir = [k for k, info in infos.items() if info["reference"] == "ir"]
    assert len(from_ir) >= 2 and any(k.startswith("triton_red_") for k in from_ir)
    for kernel in from_ir:
        assert "aten.native_layer_norm.default" in infos[kernel]["aten_ops"] or \
            "aten.var_mean.correction" in infos[kernel]["aten_ops"], kernel
        assert "Inductor's IR" in (root / summary["model"] / kernel / "reference.py").read_text()


def test_float32_evaluation_of_the_ir_references_passes_every_trial(captured):
    check_float32_passes_every_trial(captured[0])
