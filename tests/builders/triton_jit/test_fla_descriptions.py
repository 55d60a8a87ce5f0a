"""flash-linear-attention's chunked kernels (examples/fla): every description loads (fla
imported without a GPU, problem checked, members resolved), one builds end to end on CPU,
and the references, written from simple GLA's token recurrence, agree with the chunked
closed form the kernels compute (states at chunk starts plus the causal part of a chunk),
at small sizes in float64. Skips when fla (fla-core) is not installed."""
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from builders.base import BuildOptions
from dataset_spec.store.dataset import Dataset
from dataset_spec.ops import check_problem

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "fla"
DESCRIPTIONS = sorted(EXAMPLES.glob("*.yaml"))
sys.path.insert(0, str(EXAMPLES))
import fla_reference  # noqa: E402


@pytest.mark.parametrize("path", DESCRIPTIONS, ids=lambda p: p.stem)
def test_every_fla_description_loads(path):
    pytest.importorskip("fla")
    pytest.importorskip("triton")
    from builders.triton_jit import load_description
    description = load_description(path)
    check_problem(description.problem)
    assert description.problem.problem_id.startswith("fla/")
    assert "def " in description.problem.params["reference_source"]


def test_chunk_local_cumsum_builds_from_its_description(tmp_path):
    pytest.importorskip("fla")
    from ptxds.pipeline import run_build
    run_build("triton-jit", tmp_path, BuildOptions(archs=["sm_90a"], extra={"call": str(EXAMPLES / "chunk_local_cumsum.yaml")}),
              jobs=1, progress=False)
    rows = Dataset.open(tmp_path).records()
    assert [r.status for r in rows] == ["built"] * 4, [r.status_message for r in rows]  # 1, 2, 4, 8 warps
    assert {r.name for r in rows} == {"chunk_local_cumsum_scalar_kernel"}
    assert sorted(r.launches[0].block[0] for r in rows) == [32, 64, 128, 256]
    assert {r.launches[0].grid for r in rows} == {(64 * 2 * 16, 1, 1)}
    assert all(r.variant["specialization"]["specialised_away"] == {"cu_seqlens": None, "chunk_indices": None}
               for r in rows)


def _gla(seed=0, batch=1, steps=192, heads=2, dk=16, dv=8):
    rng = np.random.default_rng(seed)
    return {"q": rng.normal(size=(batch, steps, heads, dk)), "k": rng.normal(size=(batch, steps, heads, dk)),
            "v": rng.normal(size=(batch, steps, heads, dv)), "g_raw": rng.uniform(-0.2, 0, (batch, steps, heads))}


def test_the_recurrence_gives_the_chunked_closed_form():
    inputs, chunk = _gla(), 64
    problem = SimpleNamespace(params={"chunk_size": chunk, "scale": 0.25})
    o = fla_reference.chunk_fwd_o(inputs, problem)["o"]
    states = fla_reference.chunk_states(inputs, problem)
    g = fla_reference.log2_decay_cumsum(inputs, problem) * np.log(2.0)
    for index, start in enumerate(range(0, 192, chunk)):
        span = slice(start, start + chunk)
        q, k, v, gc = inputs["q"][:, span], inputs["k"][:, span], inputs["v"][:, span], g[:, span]
        inter = np.einsum("bthk,bhkv->bthv", q, states[:, index]) * np.exp(gc)[..., None]
        a = np.einsum("bthk,bshk->btsh", q, k) * np.exp(gc[:, :, None] - gc[:, None]) * \
            np.tril(np.ones((chunk, chunk)))[None, :, :, None]
        assert np.allclose(0.25 * (inter + np.einsum("btsh,bshv->bthv", a, v)), o[:, span], rtol=1e-12, atol=1e-12)
    h = fla_reference.chunk_fwd_h(inputs, problem)
    assert np.array_equal(h["h"], states) and not np.allclose(h["ht"], states[:, -1])
    assert np.allclose(np.einsum("bhk,bhkv->bhv", inputs["q"][:, -1], h["ht"]) * 0.25, o[:, -1])


def test_chunk_local_cumsum_restarts_at_each_chunk():
    s = np.arange(1.0, 9.0).reshape(1, 8, 1)
    forward = fla_reference.chunk_local_cumsum({"s": s}, SimpleNamespace(params={"chunk_size": 4, "scale": 2.0}))
    backward = fla_reference.chunk_local_cumsum({"s": s}, SimpleNamespace(params={"chunk_size": 4, "reverse": True}))
    assert forward["o"].ravel().tolist() == [2, 6, 12, 20, 10, 22, 36, 52]
    assert backward["o"].ravel().tolist() == [10, 9, 7, 4, 26, 21, 15, 8]
