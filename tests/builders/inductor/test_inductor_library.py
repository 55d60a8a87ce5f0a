"""Models from the libraries themselves (builders/inductor/library_models.py): a transformers
BERT (embeddings and two encoder layers, sdpa attention with a padding mask) is captured on
CPU with every Triton kernel kept, its inputs keep their real roles (token ids over the
vocabulary, the position-id buffer over the positions), the kernels build as inductor rows,
and a float32 evaluation of every kernel's graph passes every trial the verifier draws."""
import json

import pytest

pytest.importorskip("triton")
torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from builders.inductor.capture import capture_models  # noqa: E402
from builders.inductor.library_models import LIBRARY_MODELS, dataset_specs  # noqa: E402
from builders.inductor.models import ModelSpec, example_inputs  # noqa: E402
from test_inductor_reference import check_float32_passes_every_trial  # noqa: E402

MODEL = "bert-float16-b1s16"


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    root = tmp_path_factory.mktemp("capture")
    [summary] = capture_models("bert:float16:1:16", root)
    return root, summary


def test_every_kernel_of_the_transformers_bert_is_captured(captured):
    _, summary = captured
    assert summary["model"] == MODEL
    assert summary["skipped"] == {}
    assert len(summary["kernels"]) >= 4
    assert "_scaled_dot_product_efficient_attention" in summary["aten_fallbacks"]  # the padding mask


def test_bert_inputs_keep_their_roles(captured):
    root, summary = captured
    roles = set()
    for kernel in summary["kernels"]:
        roles |= set(json.loads((root / MODEL / kernel / "inductor.json").read_text())["graph_inputs"].values())
    # token ids over the vocabulary, the padding mask over {0, 1}, BERT's position_ids buffer
    # (an arange of 512) over the positions
    assert {"indices:2048", "indices:2", "indices:512", "weight:model.embeddings.word_embeddings.weight"} <= roles


def test_the_captured_kernels_build_as_inductor_rows(captured, tmp_path):
    from click.testing import CliRunner
    from dataset_spec.store.shards import read_records
    from ptxds.cli import cli
    root, summary = captured
    out = tmp_path / "data"
    result = CliRunner().invoke(cli, ["build", "--source", "inductor", "--captured", str(root), "--out", str(out),
                                      "--arch", "sm_90a", "--jobs", "1", "--silent"])
    assert result.exit_code == 0, result.output
    rows = read_records(out)
    assert {r.group_id for r in rows} == {f"inductor/{MODEL}/{k}" for k in summary["kernels"]}
    assert all(r.source == "inductor" and r.status == "built" for r in rows)
    assert all(r.provenance["model"] == MODEL and r.provenance["aten_ops"] for r in rows)


def test_float32_evaluation_of_the_bert_kernels_passes_every_trial(captured):
    check_float32_passes_every_trial(captured[0])


def test_library_model_specs_and_example_inputs():
    spec = ModelSpec.parse("resnet50")
    assert (spec.dtype, spec.batch, spec.seq) == ("float16", 1, 64)  # the entry's first size
    assert ModelSpec.parse("llama:backward") == ModelSpec("llama", "bfloat16", 1, 64, True)
    with pytest.raises(ValueError, match="unknown model 'resnet51'.*resnet50"):
        ModelSpec.parse("resnet51")
    specs = dataset_specs()
    assert len(specs) == len(set(specs)) and "llama:bfloat16:4:256:backward" in specs and "unet:float32:2:32" in specs
    assert all(ModelSpec.parse(s).block in LIBRARY_MODELS for s in specs)
    module, inputs = example_inputs(ModelSpec.parse("bert:float32:2:8"))
    assert [t.dtype for t in inputs] == [torch.int64] * 3 and int(inputs[0].max()) < 2048
    with torch.no_grad():
        assert module(*inputs).shape == (2, 8, 512)
