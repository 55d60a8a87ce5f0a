"""The blocks beyond the first three (builders/inductor/models.py): a Mixtral-style MoE
decoder layer, BERT's embeddings and encoder layer, and a T5 encoder layer are captured on
CPU with every Triton kernel kept; the MoE's expert gather reads the router's top-k indices
drawn over the expert count; BERT's masked attention is the memory-efficient CUDA kernel;
and a float32 evaluation of every kernel's graph passes every trial the verifier draws."""
import json

import pytest

pytest.importorskip("triton")
pytest.importorskip("torch")

from builders.inductor.capture import capture_models  # noqa: E402
from test_inductor_reference import check_float32_passes_every_trial  # noqa: E402

MODELS = "moe_block:float16:1:16,bert_block:float16:1:16,t5_block:float16:1:16"


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    root = tmp_path_factory.mktemp("capture")
    return root, {s["model"]: s for s in capture_models(MODELS, root)}


def test_every_kernel_of_the_new_blocks_is_captured(captured):
    _, summaries = captured
    assert set(summaries) == {"moe_block-float16-b1s16", "bert_block-float16-b1s16", "t5_block-float16-b1s16"}
    for name, summary in summaries.items():
        assert summary["skipped"] == {}, name
        assert len(summary["kernels"]) >= 4, name
    assert "topk" in summaries["moe_block-float16-b1s16"]["aten_fallbacks"]
    assert "_scaled_dot_product_efficient_attention" in summaries["bert_block-float16-b1s16"]["aten_fallbacks"]


def test_moe_expert_gather_reads_router_indices_over_the_expert_count(captured):
    root, summaries = captured
    model = "moe_block-float16-b1s16"
    [gather] = [k for k in summaries[model]["kernels"] if k.endswith(tuple(f"fused_index_{i}" for i in range(20)))]
    call = json.loads((root / model / gather / "call.json").read_text())
    indices = [b for b in call["problem"]["buffers"] if b["dtype"] == "int64"]
    assert indices and all(b["init"] == {"kind": "randint", "params": {"low": 0, "high": 8}} for b in indices)
    info = json.loads((root / model / gather / "inductor.json").read_text())
    assert "indices:8" in info["graph_inputs"].values()


def test_bert_embedding_kernel_reads_token_ids_over_the_vocabulary(captured):
    root, summaries = captured
    model = "bert_block-float16-b1s16"
    [embed] = [k for k in summaries[model]["kernels"] if "embedding" in k]
    roles = json.loads((root / model / embed / "inductor.json").read_text())["graph_inputs"]
    assert {"indices:1024", "indices:2", "weight:word.weight", "weight:position.weight"} <= set(roles.values())


def test_float32_evaluation_of_the_new_blocks_passes_every_trial(captured):
    check_float32_passes_every_trial(captured[0])
