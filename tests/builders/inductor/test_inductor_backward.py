"""The training backward (builders/inductor/capture.py ``trace_backward``): the Llama decoder
layer's and BERT block's backward graphs, as aot_autograd's partitioner hands them to
Inductor, are captured on CPU; the decoder's with every Triton kernel kept, BERT's with each
left-out kernel's reason; the backward's inputs carry their roles (parameters, saved
activations, the incoming gradient); and a float32 evaluation of every captured kernel's
graph passes every trial the verifier draws."""
import json

import pytest

pytest.importorskip("triton")
pytest.importorskip("torch")

from builders.inductor.capture import capture_models  # noqa: E402
from builders.inductor.models import ModelSpec  # noqa: E402
from test_inductor_reference import check_float32_passes_every_trial  # noqa: E402

LLAMA, BERT = "llama_layer-float16-b1s16-backward", "bert_block-float16-b1s16-backward"


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    root = tmp_path_factory.mktemp("capture")
    models = "llama_layer:float16:1:16:backward,bert_block:float16:1:16:backward"
    return root, {s["model"]: s for s in capture_models(models, root)}


def test_backward_spec_parses():
    assert ModelSpec.parse("llama_layer:backward") == ModelSpec("llama_layer", "float16", 2, 64, True)
    assert ModelSpec.parse("bert_block:float32:1:16:backward").name == "bert_block-float32-b1s16-backward"
    assert not ModelSpec.parse("bert_block:float32:1:16").backward


def test_every_backward_kernel_is_captured_or_has_its_reason(captured):
    _, summaries = captured
    assert set(summaries) == {LLAMA, BERT}
    assert all(s["graph"] == "backward" for s in summaries.values())
    assert summaries[LLAMA]["skipped"] == {}
    assert len(summaries[LLAMA]["kernels"]) >= 5
    assert "_scaled_dot_product_flash_attention_backward" in summaries[LLAMA]["aten_fallbacks"]
    assert len(summaries[BERT]["kernels"]) >= 8
    # the embedding gradients' scatter-adds, recorded and never silently dropped: torch 2.11
    # names the accumulators' fill kernels ``fused_full``, so the reason names the scatter
    skipped = summaries[BERT]["skipped"]
    assert 1 <= len(skipped) <= 5
    assert all(reason and "index_put" in name + reason for name, reason in skipped.items())


def test_backward_inputs_have_their_roles(captured):
    root, summaries = captured
    roles = set()
    for kernel in summaries[LLAMA]["kernels"]:
        roles |= set(json.loads((root / LLAMA / kernel / "inductor.json").read_text())["graph_inputs"].values())
    assert "gradient" in roles
    assert any(r.startswith("saved:") for r in roles)
    assert any(r.startswith("weight:") for r in roles)


def test_float32_evaluation_of_the_backward_passes_every_trial(captured):
    check_float32_passes_every_trial(captured[0])
