"""CPU tests of a Mirage file's analysis (builders/mirage/analysis.py) and the shortcuts it
takes in dataset_spec/mugraph.py: a muGraph's independent batch slices (``batch_tiles``,
``cut_batch``) give the same numbers as the whole batch; the domain search stops a walk
once a tensor is too large and meets its periodic patterns on two slices, with the same
answers as the plain search; the tasks run in parallel give the answer one process gives;
the kept answers follow the file's content and the code, and a corrupt one is analysed
again after a one-line note.

muGraph files are read from ../shared/mirage (skipped when absent)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from builders.mirage import analysis
from builders.mirage.builder import default_dir
from dataset_spec import mugraph
from test_mirage_builder import X_MAP, _graph

MUGRAPH_DIR = default_dir()
needs_files = pytest.mark.skipif(not (MUGRAPH_DIR / "mha_bs1.json").exists(),
                                 reason=f"no shared muGraphs at {MUGRAPH_DIR}")


def _raw(stem):
    return json.loads((MUGRAPH_DIR / f"{stem}.json").read_text())


def _small_mha():
    """mha_bs1's muGraphs on 4 of their 32 batch slices (the tests' walks stay short)."""
    return [mugraph.cut_batch(g, 4) for g in _raw("mha_bs1")]


def _inputs(graph, seed=1):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-0.1, 0.1, s) for s in mugraph.io_tensors(graph)[0]]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PTXDS_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "mirage" / "analysis"


@needs_files
@pytest.mark.parametrize("stem, batch", [("mha_bs1", 32), ("ntrans_bs1", 8), ("gqa_bs1", 2)])
def test_a_cut_batch_gives_the_whole_batch_first_slices_bit_for_bit(stem, batch):
    raw = _raw(stem)
    xs = _inputs(raw[0])
    assert analysis.agreement_slices(raw, list(range(len(raw)))) == 1
    for graph in raw[::5]:  # every fifth: each walk of the whole batch takes a while
        assert mugraph.batch_tiles(graph) == (batch, 1)
        whole = mugraph.evaluate(graph, xs)
        assert np.array_equal(mugraph.evaluate(mugraph.cut_batch(graph, 1), [x[:1] for x in xs]), whole[:1])


@needs_files
@pytest.mark.parametrize("stem", ["mqa_bs1", "rmsnorm_bs1", "lora", "gated_mlp"])
def test_muGraphs_without_independent_batch_slices_are_walked_whole(stem):
    # mqa: a batch of one; the others: a weight without the batch dimension
    raw = _raw(stem)
    assert all(mugraph.batch_tiles(g) is None for g in raw)
    assert analysis.agreement_slices(raw, list(range(len(raw)))) is None


def _tiny(forloop_dim=-1, ops=()):
    """x [4, 8] in two blocks of 2 rows, ``ops`` (tb op names, each on the last) between
    load and store."""
    chain, guid = [], 10
    for kind in ops:
        chain.append((kind, [(guid, (2, 8))], [(guid + 1, (2, 8))]))
        guid += 1
    return _graph([("tb_input_op", [], [(10, (2, 8))], (1, (4, 8)), X_MAP, forloop_dim), *chain,
                   ("tb_accum_nored_op", [(guid, (2, 8))], [(99, (2, 8), True)]),
                   ("tb_output_op", [(99, (2, 8), True)], [], (2, (4, 8)), X_MAP)],
                  [(1, (4, 8))], (2, (4, 8)), grid=(2, 1, 1))


def test_a_kernel_whose_loop_walks_the_batch_has_no_slices():
    assert mugraph.batch_tiles(_tiny(forloop_dim=0)) is None
    assert mugraph.batch_tiles(_tiny()) == (4, 2)


@needs_files
def test_periodic_patterns_make_the_same_tensors_on_two_slices():
    graph = _small_mha()[0]
    keep = mugraph.periodic_probe(graph)
    assert keep == 2
    cut = mugraph.cut_batch(graph, keep)
    shapes = mugraph.io_tensors(graph)[0]
    for hi in (0.125, 4.0):
        for make, periodic in mugraph._pattern_makers(hi, np.random.default_rng(0)):
            if periodic:
                whole = mugraph.intermediate_max(graph, [make(tuple(s)) for s in shapes])
                assert mugraph.intermediate_max(cut, [make((keep,) + tuple(s[1:])) for s in shapes]) == whole


@needs_files
def test_a_walk_stops_at_the_limit_with_the_same_verdict():
    graph = _small_mha()[0]
    for hi in (0.1, 4.0):
        xs = [np.full(s, hi) for s in mugraph.io_tensors(graph)[0]]
        whole = mugraph.intermediate_max(graph, xs)
        stopped = mugraph.intermediate_max(graph, xs, mugraph.FP16_SAFE)
        assert (whole < mugraph.FP16_SAFE) == (stopped < mugraph.FP16_SAFE)
        assert stopped == whole if whole < mugraph.FP16_SAFE else stopped >= mugraph.FP16_SAFE


@needs_files
@pytest.mark.parametrize("stem", ["mha_bs1", "ntrans_bs1", "lora"])
def test_the_domain_search_answers_as_the_plain_search(stem):
    graph = _small_mha()[0] if stem == "mha_bs1" else _raw(stem)[0]
    assert (mugraph.periodic_probe(graph) is None) == (stem == "lora")
    plain = mugraph.search_domain(lambda xs: mugraph.intermediate_max(graph, xs), mugraph.io_tensors(graph)[0])
    assert mugraph.find_domain(graph) == plain


def test_the_alternating_pattern_is_the_checkerboard_of_index_parity():
    for shape in [(5,), (3, 4), (2, 3, 5), (4, 1, 3, 2)]:
        parity = sum(np.indices(shape)) % 2
        assert np.array_equal(mugraph._alternating(shape), np.where(parity, -1.0, 1.0))


@needs_files
def test_tasks_in_parallel_answer_as_one_process(cache, tmp_path, capsys):
    mha = tmp_path / "mha_bs1.json"
    mha.write_text(json.dumps(_small_mha()))
    files = [mha, MUGRAPH_DIR / "lora.json", MUGRAPH_DIR / "ntrans_bs1.json"]
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    analysis.analyse_all(files + [bad], jobs=2, memory_bytes=1)  # one task at a time by memory
    parallel = {f.name: analysis.cached_analysis(f) for f in files}
    log = capsys.readouterr().err
    assert "mirage: analysing 4 muGraph file(s) (0 kept)" in log
    assert "bad.json: refused: bad.json: not a muGraph list" in log
    assert "mha_bs1.json: domain 0.1768, std 0.25" in log and "ntrans_bs1.json: domain 128, std 1" in log
    for f in cache.glob("*.json"):
        f.unlink()
    for f in files:
        found = analysis.analyse(f)
        assert (found.differ, found.hi, found.std) == (parallel[f.name].differ, parallel[f.name].hi,
                                                       parallel[f.name].std)
    assert parallel["lora.json"].hi == 2 ** 0.5 and parallel["lora.json"].std == 1.0


@needs_files
def test_kept_answers_follow_content_and_code_and_a_corrupt_one_is_redone(cache, tmp_path, monkeypatch, capsys):
    path = tmp_path / "lora.json"
    path.write_bytes((MUGRAPH_DIR / "lora.json").read_bytes())
    first = analysis.analyse(path)
    assert analysis.cached_analysis(path) == first
    path.write_text(json.dumps(json.loads(path.read_text())[:2]))  # other content: not kept yet
    assert analysis.cached_analysis(path) is None
    analysis.analyse(path)
    monkeypatch.setattr(analysis, "_code_digest", lambda: b"the walk changed")
    assert analysis.cached_analysis(path) is None
    monkeypatch.undo()
    monkeypatch.setenv("PTXDS_CACHE", str(cache.parents[1]))
    (kept,) = [f for f in cache.glob("*.json") if analysis._cache_file(path.read_bytes()) == f]
    kept.write_text("{broken")
    again = analysis.analyse(path)
    assert (again.hi, again.std) == (first.hi, first.std)
    err = capsys.readouterr().err
    assert err.count("analysis cache file") == 1 and "analysing its muGraph file again" in err
    assert "Traceback" not in err
    assert analysis.cached_analysis(path) == again


def test_a_file_with_no_safe_domain_is_refused_in_one_line(cache, tmp_path):
    path = tmp_path / "exploding.json"
    path.write_text(json.dumps([_tiny(ops=["tb_exp_op"] * 6)]))  # exp of exp of ...: never finite
    with pytest.raises(analysis.MirageInputError, match=r"exploding\.json: muGraph 0: no input magnitude"):
        analysis.analyse(path)
