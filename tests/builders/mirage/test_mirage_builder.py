"""CPU tests of the Mirage source: parsing, the lowering plan (run by the numpy interpreter
against the float64 formulas for every shared muGraph), the tb ops on small tiles, the
error model, bad input, and compiled rows for sm_80 and sm_90a.

The muGraph files are data read from ../shared/mirage (or $PTXDS_MIRAGE_DIR); tests that
need them skip when they are absent. Compiles are cached under ~/.cache/ptxds/mirage.
"""
from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from builders.base import BuildOptions
from builders.mirage import MirageBuilder, MirageInputError
from builders.mirage.builder import analyse_file, default_dir, plan_of
from builders.mirage.graph import MuGraphError
from builders.mirage.interpret import run_plan
from builders.mirage.plan import lower
from verify.trials.inputs import make_trial_inputs
from dataset_spec import mugraph as mugraph_semantics
from dataset_spec.model import DEFAULT_TRIAL_KINDS
from dataset_spec.problems import get_op
from ptxds.finalize import finalize_record
from helpers import needs_nvcc

MUGRAPH_DIR = default_dir()
FILES = sorted(MUGRAPH_DIR.glob("*.json")) if MUGRAPH_DIR.is_dir() else []
needs_files = pytest.mark.skipif(not FILES, reason=f"no shared muGraphs at {MUGRAPH_DIR}")


# ----------------------------------------------------------------------------- trial inputs

def trial_inputs(info, kind, seed=0):
    """The verifier's own inputs for one trial of ``kind`` (float64 values of the stored fp16)."""
    problem = dataclasses.replace(info.problem, trial_kinds=[kind])
    return make_trial_inputs(problem, f"mirage-test-{seed}", 0).values


@pytest.fixture(scope="module")
def infos():
    return {path.stem: analyse_file(path) for path in FILES}


# ----------------------------------------------------------------------------- parsing

@needs_files
def test_every_shared_file_parses_to_its_operator(infos):
    assert {info.problem.op for info in infos.values()} == {"mugraph"}
    ops = {stem: info.operator for stem, info in infos.items()}
    assert ops == {"gated_mlp": "gated_mlp", "gqa_bs1": "attention", "lora": "lora",
                   "mha_bs1": "attention", "mqa_bs1": "attention", "ntrans_bs1": "ntrans",
                   "rmsnorm_bs1": "rmsnorm_matmul"}
    counts = {stem: len(info.graphs) for stem, info in infos.items()}
    assert sum(counts.values()) == 124
    assert not [g for info in infos.values() for g in info.graphs if isinstance(g, MuGraphError)]


@needs_files
def test_problem_records_distributions_domain_and_kinds(infos):
    p = infos["gqa_bs1"].problem
    # found by the search on the float64 evaluation: exp(Q@K) and its row sums stay in float16
    assert p.params["input_range"]["Q"][1] * p.params["input_range"]["K"][1] * 64 < 2.1
    assert p.buffer("Q").init.kind == "normal" and p.params["math_input"] == "float16"
    assert p.params["mugraph_index"] == 0 and p.params["mugraph"][0]["op_type"] == "kn_input_op"
    assert p.trial_kinds == list(DEFAULT_TRIAL_KINDS) and "stress" in p.trial_kinds
    assert p.buffer("O").shape == (2, 256, 64) and p.buffer("O").role == "out"


# ----------------------------------------------------------------------------- semantics

@needs_files
@pytest.mark.parametrize("stem", [p.stem for p in FILES])
def test_interpreter_matches_formula_for_every_mugraph(infos, stem):
    """Each muGraph's plan, executed block by block and iteration by iteration with fp16
    storage, equals the float64 formula up to fp16 roundoff (a map or loop mistake gives
    O(1) errors)."""
    info = infos[stem]
    inputs = trial_inputs(info, "normal")
    spec = get_op(info.problem.op)
    reference = spec.reference(inputs, info.problem)[info.output_name]
    scale = np.abs(reference).max()
    for graph in info.graphs:
        out = run_plan(plan_of(info, graph), inputs)[info.output_name].astype(np.float64)
        assert np.isfinite(out).all(), f"{stem} muGraph {graph.index}: unwritten or non-finite output"
        err = np.abs(out - reference).max() / scale
        assert err < 5e-3, f"{stem} muGraph {graph.index}: relative error {err:.3g}"


def _graph(ops, inputs, output, grid=(1, 1, 1), forloop=1, rdx=4):
    """A one-kernel muGraph in Mirage's JSON form, for tb-op unit tests."""
    def t(guid, dims, after=False):
        return {"guid": guid, "dim": list(dims) + [0] * (4 - len(dims)), "num_dims": len(dims),
                "data_type": 921, "layout": "DmemRowMajor", "after_accum": after}
    body = [{"op_type": "kn_input_op", "input_strides": None, "output_tensors": [t(g, s)]} for g, s in inputs]
    tb = []
    for op in ops:
        entry = {"op_type": op[0], "input_tensors": [t(*x) for x in op[1]],
                 "output_tensors": [t(*x) for x in op[2]]}
        if op[0] == "tb_input_op":
            entry.update(dtensor=t(*op[3]), input_map=op[4], forloop_dim=op[5])
        if op[0] == "tb_output_op":
            entry.update(dtensor=t(*op[3]), output_map=op[4])
        tb.append(entry)
    axes = dict(zip("xyz", grid))
    body.append({"op_type": "kn_customized_op", "input_tensors": [t(g, s) for g, s in inputs],
                 "output_tensors": [t(*output)],
                 "bgraph": {"grid_dim": axes, "block_dim": {"x": 128, "y": 1, "z": 1},
                            "forloop_range": forloop, "reduction_dimx": rdx, "smem_offset": 0, "operators": tb}})
    body.append({"op_type": "kn_output_op", "input_tensors": [t(*output)], "output_strides": None})
    return body


NO_MAP = {"x": -1, "y": -1, "z": -1}
X_MAP = {"x": 0, "y": -1, "z": -1}


def _run_unary(kind, x):
    """x [4, 16] split over 2 blocks by rows, loop of 2 over columns, accumulated (nored)."""
    raw = _graph([("tb_input_op", [], [(10, (2, 8))], (1, (4, 16)), X_MAP, 1),
                  (kind, [(10, (2, 8))], [(11, (2, 8))]),
                  ("tb_accum_nored_op", [(11, (2, 8))], [(12, (2, 8), True)]),
                  ("tb_output_op", [(12, (2, 8), True)], [], (2, (4, 8)), X_MAP)],
                 [(1, (4, 16))], (2, (4, 8)), grid=(2, 1, 1), forloop=2)
    from builders.mirage.graph import parse_mugraph
    plan = lower(parse_mugraph(raw, "unit.json", 0), ["x"], "y")
    return run_plan(plan, {"x": x})["y"].astype(np.float64)


@pytest.mark.parametrize("kind,formula", [
    ("tb_exp_op", np.exp), ("tb_silu_op", lambda v: v / (1 + np.exp(-v)))])
def test_unary_tb_ops_with_loop_accumulation(kind, formula):
    x = np.random.default_rng(0).uniform(-1, 1, (4, 16)).astype(np.float16).astype(np.float64)
    want = formula(x[:, :8]) + formula(x[:, 8:])
    assert np.allclose(_run_unary(kind, x), want, rtol=3e-3, atol=1e-3)


def _run_tb(ops, inputs, output, **kw):
    from builders.mirage.graph import parse_mugraph
    names = [f"in{i}" for i in range(len(inputs))]
    plan = lower(parse_mugraph(_graph(ops, [(g, s) for g, s, _ in inputs], output, **kw), "unit.json", 0),
                 names, "out")
    return run_plan(plan, {n: v for n, (_, _, v) in zip(names, inputs)})["out"].astype(np.float64)


def _rand(*shape, seed=0, low=-1.0, high=1.0):
    return np.random.default_rng(seed).uniform(low, high, shape).astype(np.float16).astype(np.float64)


def test_matmul_tiles_over_grid_and_loop():
    """C[8, 32] = A[8, 64] @ B[64, 32]: grid x splits N, the loop walks K (partial
    products summed by accum_nored)."""
    a, b = _rand(8, 64), _rand(64, 32, seed=1)
    out = _run_tb([("tb_input_op", [], [(10, (8, 16))], (1, (8, 64)), NO_MAP, 1),
                   ("tb_input_op", [], [(11, (16, 16))], (2, (64, 32)), {"x": 1, "y": -1, "z": -1}, 0),
                   ("tb_matmul_op", [(10, (8, 16)), (11, (16, 16))], [(12, (8, 16))]),
                   ("tb_accum_nored_op", [(12, (8, 16))], [(13, (8, 16), True)]),
                   ("tb_output_op", [(13, (8, 16), True)], [], (3, (8, 32)), {"x": 1, "y": -1, "z": -1})],
                  [(1, (8, 64), a), (2, (64, 32), b)], (3, (8, 32)), grid=(2, 1, 1), forloop=4)
    assert np.allclose(out, a @ b, rtol=5e-3, atol=5e-3)


@pytest.mark.parametrize("kind", ["tb_add_op", "tb_mul_op", "tb_div_op"])
def test_binary_tb_ops_broadcast_both_operands(kind):
    """qknorm_gqa_bs8's case: (1, 1, 8) op (1, 4, 1) -> (1, 4, 8), in the interpreter and
    the float64 evaluator alike."""
    a, b = _rand(1, 1, 8), _rand(1, 4, 1, seed=2, low=0.5, high=1.5)
    ops = [("tb_input_op", [], [(10, (1, 1, 8))], (1, (1, 1, 8)), NO_MAP, -1),
           ("tb_input_op", [], [(11, (1, 4, 1))], (2, (1, 4, 1)), NO_MAP, -1),
           (kind, [(10, (1, 1, 8)), (11, (1, 4, 1))], [(12, (1, 4, 8))]),
           ("tb_accum_nored_op", [(12, (1, 4, 8))], [(13, (1, 4, 8), True)]),
           ("tb_output_op", [(13, (1, 4, 8), True)], [], (3, (1, 4, 8)), NO_MAP)]
    inputs = [(1, (1, 1, 8), a), (2, (1, 4, 1), b)]
    out = _run_tb(ops, inputs, (3, (1, 4, 8)))
    want = {"tb_add_op": a + b, "tb_mul_op": a * b, "tb_div_op": a / b}[kind]
    assert out.shape == (1, 4, 8) and np.allclose(out, want, rtol=2e-3, atol=1e-3)
    exact = mugraph_semantics.evaluate(_graph(ops, [(g, s) for g, s, _ in inputs], (3, (1, 4, 8))), [a, b])
    assert np.allclose(exact, want, rtol=1e-15, atol=0)


@pytest.mark.parametrize("a_shape,b_shape", [((4, 8), (4, 1)), ((1, 8), (4, 1)), ((4, 1), (1, 8)),
                                             ((2, 1, 8), (3, 1)), ((8,), (2, 3, 8))])
def test_cuda_broadcast_index_reads_what_numpy_broadcasts(a_shape, b_shape):
    """The index expressions the CUDA printer emits, evaluated with integer division,
    pick the elements numpy's broadcasting pairs with each output element."""
    from builders.mirage.cuda import broadcast_index
    from builders.mirage.graph import broadcast_shape
    out = broadcast_shape(a_shape, b_shape)
    for shape in (a_shape, b_shape):
        flat = np.arange(int(np.prod(shape))).reshape(shape)
        want = np.broadcast_to(flat, out).ravel()
        expr = broadcast_index(shape, out, "i").replace("/", "//")
        got = [eval(expr, {"i": i}) for i in range(int(np.prod(out)))]
        assert got == list(want), (shape, out, expr)


def test_kn_elementwise_broadcasts_both_operands():
    from builders.mirage.graph import parse_mugraph
    def t(guid, dims):
        return {"guid": guid, "dim": list(dims) + [0] * (4 - len(dims)), "num_dims": len(dims),
                "data_type": 921}
    raw = [{"op_type": "kn_input_op", "output_tensors": [t(1, (1, 8))]},
           {"op_type": "kn_input_op", "output_tensors": [t(2, (4, 1))]},
           {"op_type": "kn_mul_op", "input_tensors": [t(1, (1, 8)), t(2, (4, 1))], "output_tensors": [t(3, (4, 8))]},
           {"op_type": "kn_output_op", "input_tensors": [t(3, (4, 8))]}]
    a, b = _rand(1, 8), _rand(4, 1, seed=3)
    plan = lower(parse_mugraph(raw, "unit.json", 0), ["a", "b"], "y")
    assert np.allclose(run_plan(plan, {"a": a, "b": b})["y"].astype(np.float64), a * b, rtol=2e-3, atol=1e-3)
    assert np.allclose(mugraph_semantics.evaluate(raw, [a, b]), a * b, rtol=1e-15, atol=0)


def test_file_whose_mugraphs_disagree_is_refused_with_the_indices(tmp_path):
    """Mirage found a file's muGraphs equivalent; one that computes something else (here
    tb_exp turned into tb_silu in muGraph 1) makes the whole file unlabelled."""
    def one(kind):
        return _graph([("tb_input_op", [], [(10, (2, 8))], (1, (4, 8)), X_MAP, -1),
                       (kind, [(10, (2, 8))], [(11, (2, 8))]),
                       ("tb_accum_nored_op", [(11, (2, 8))], [(12, (2, 8), True)]),
                       ("tb_output_op", [(12, (2, 8), True)], [], (2, (4, 8)), X_MAP)],
                      [(1, (4, 8))], (2, (4, 8)), grid=(2, 1, 1))
    path = tmp_path / "mixed.json"
    path.write_text(json.dumps([one("tb_exp_op"), one("tb_silu_op"), one("tb_exp_op"), one("tb_silu_op")]))
    with pytest.raises(MirageInputError, match=r"mixed\.json: muGraphs \[1, 3\] compute a different function"):
        analyse_file(path)
    path.write_text(json.dumps([one("tb_exp_op")] * 3))
    info = analyse_file(path)
    assert info.problem.op == "mugraph" and info.operator == "" and info.input_names == ("in0",)


@pytest.mark.parametrize("kind", ["tb_add_op", "tb_mul_op", "tb_div_op"])
def test_binary_tb_ops_broadcast_the_last_dim(kind):
    a, b = _rand(4, 8), _rand(4, 1, seed=2, low=0.5, high=1.5)
    out = _run_tb([("tb_input_op", [], [(10, (4, 8))], (1, (4, 8)), NO_MAP, -1),
                   ("tb_input_op", [], [(11, (4, 1))], (2, (4, 1)), NO_MAP, -1),
                   (kind, [(10, (4, 8)), (11, (4, 1))], [(12, (4, 8))]),
                   ("tb_accum_nored_op", [(12, (4, 8))], [(13, (4, 8), True)]),
                   ("tb_output_op", [(13, (4, 8), True)], [], (3, (4, 8)), NO_MAP)],
                  [(1, (4, 8), a), (2, (4, 1), b)], (3, (4, 8)))
    want = {"tb_add_op": a + b, "tb_mul_op": a * b, "tb_div_op": a / b}[kind]
    assert np.allclose(out, want, rtol=2e-3, atol=1e-3)


def test_reductions_rms_and_redtox_across_loop():
    """rms_norm per row; red_ld_sum and red_ld_rms reduce the last dim to 1 across two
    loop iterations; redtox sums element k * dimx + j into j."""
    x = _rand(2, 16, seed=3, low=0.5, high=1.5)
    common = [("tb_input_op", [], [(10, (2, 8))], (1, (2, 16)), NO_MAP, 1)]
    cases = {
        "tb_accum_red_ld_sum_op": ((2, 1), x.sum(-1, keepdims=True)),
        "tb_accum_red_ld_rms_op": ((2, 1), np.sqrt((x * x).mean(-1, keepdims=True))),
        "tb_accum_redtox_ld_sum_op": ((2, 4), x.reshape(2, 4, 4).sum(1)),
    }
    for kind, (shape, want) in cases.items():
        out = _run_tb(common + [(kind, [(10, (2, 8))], [(11, shape, True)]),
                                ("tb_output_op", [(11, shape, True)], [], (2, shape), NO_MAP)],
                      [(1, (2, 16), x)], (2, shape), forloop=2, rdx=4)
        assert np.allclose(out, want, rtol=3e-3), kind
    out = _run_tb([("tb_input_op", [], [(10, (2, 16))], (1, (2, 16)), NO_MAP, -1),
                   ("tb_rms_norm_op", [(10, (2, 16))], [(11, (2, 16))]),
                   ("tb_accum_nored_op", [(11, (2, 16))], [(12, (2, 16), True)]),
                   ("tb_output_op", [(12, (2, 16), True)], [], (2, (2, 16)), NO_MAP)],
                  [(1, (2, 16), x)], (2, (2, 16)))
    assert np.allclose(out, x / np.sqrt((x * x).mean(-1, keepdims=True)), rtol=3e-3)


# ----------------------------------------------------------------------------- error model

@needs_files
@pytest.mark.parametrize("stem", [p.stem for p in FILES])
def test_error_bound_holds_for_the_lowering_and_catches_one_percent(infos, stem):
    """The interpreter (fp16 intermediates, fp32 accumulation: what the kernels do) stays
    within the bound on every trial kind; the reference scaled by 1.01 does not."""
    info = infos[stem]
    spec = get_op(info.problem.op)
    graphs = [info.graphs[0], info.graphs[-1]]
    for kind in info.problem.trial_kinds:
        inputs = trial_inputs(info, kind, seed=1)
        reference = spec.reference(inputs, info.problem)
        bound = spec.bounds(inputs, info.problem, reference)[info.output_name]
        ref = reference[info.output_name]
        for graph in graphs:
            out = run_plan(plan_of(info, graph), inputs)[info.output_name].astype(np.float64)
            assert np.isfinite(out).all(), f"{stem} {kind} muGraph {graph.index}: non-finite output"
            ratio = np.max(np.abs(out - ref) / bound)
            assert ratio <= 1.0, f"{stem} {kind} muGraph {graph.index}: error {ratio:.2f}x the bound"
        if kind in ("normal", "uniform"):
            assert np.any(np.abs(0.01 * ref) > bound), f"{stem} {kind}: a 1% error would pass"


# ----------------------------------------------------------------------------- bad input

def test_non_list_file_is_one_clear_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"not": "a list"}))
    with pytest.raises(MirageInputError, match=r"bad\.json: not a muGraph list"):
        analyse_file(bad)


@needs_files
@needs_nvcc
def test_bad_file_and_unknown_op_leave_the_rest_building(tmp_path):
    graphs = json.loads((MUGRAPH_DIR / "lora.json").read_text())
    graphs[1][4]["bgraph"]["operators"][5]["op_type"] = "tb_frobnicate_op"
    broken = tmp_path / "lora_broken.json"
    broken.write_text(json.dumps(graphs[:2]))
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    builder = MirageBuilder(BuildOptions(archs=["sm_80"], extra={"mugraphs": [str(bad), str(broken)]}))
    items = builder.work_items()
    assert [i.payload.get("error") for i in items][0].startswith("bad.json: not a muGraph list")
    with pytest.raises(MirageInputError):
        builder.build(items[0])
    rows = [finalize_record(r) for item in items[1:] for r in builder.build(item)]
    assert [r.status for r in rows] == ["built", "build_failed"]
    assert rows[1].status_message.startswith(
        "lora_broken.json: muGraph 1: op tb_frobnicate_op: not supported by the lowering")


# ----------------------------------------------------------------------------- compiled rows

def _build(files, archs, indices=None):
    builder = MirageBuilder(BuildOptions(archs=archs, extra={"mugraphs": [str(f) for f in files]}))
    rows = []
    for item in builder.work_items():
        if indices is not None and item.payload["index"] not in indices:
            continue
        rows += [finalize_record(r) for r in builder.build(item)]
    return rows


@needs_files
@needs_nvcc
def test_one_mugraph_per_file_builds_for_both_archs():
    rows = _build(FILES, ["sm_80", "sm_90a"], indices={0})
    assert len(rows) == 2 * len(FILES)
    bad = [(r.name, r.arch, r.status_message[:300]) for r in rows if r.status != "built"]
    assert not bad
    for r in rows:
        assert r.provenance["upstream"]["repository"] == "mirage-project/mirage"
        assert r.provenance["upstream"]["commit"] == "de8745d9"
        assert len(r.launches) == len(r.variant["kernels"])
        scratch = {b.name for b in r.scratch}
        used = {a.buffer for launch in r.launches for a in launch.args}
        assert scratch <= used and {b.name for b in r.problem.buffers} <= used
    features = {f for r in rows for f in r.features}
    assert {"mma.sync", "ldmatrix", "cp.async"} <= features


@needs_files
@needs_nvcc
def test_variant_records_the_schedule():
    rows = _build([MUGRAPH_DIR / "gqa_bs1.json"], ["sm_80"], indices={0})
    knobs = rows[0].variant
    first = knobs["kernels"][0]
    assert knobs["mugraph"] == 0 and first["grid"] == [2, 8, 16] and first["forloop_range"] == 4
    assert first["input_maps"][1] == {"tensor": [2, 64, 4096], "map": {"x": 0, "y": 2, "z": -1},
                                      "forloop_dim": 2, "tile": [1, 64, 128]}
    assert rows[0].launches[0].dynamic_smem == knobs["smem_bytes"][0] > 48 * 1024


@pytest.mark.slow
@needs_files
@needs_nvcc
def test_every_mugraph_builds_for_both_archs_with_distinct_ptx():
    rows = _build(FILES, ["sm_80", "sm_90a"])
    assert len(rows) == 248 and all(r.status == "built" for r in rows)
    for arch in ("sm_80", "sm_90a"):
        by_file = {}
        for r in rows:
            if r.arch == arch:
                by_file.setdefault(r.variant["file"], set()).add(r.ptx_hash)
        counts = {f: len(h) for f, h in by_file.items()}
        # gated_mlp: 8 muGraphs differ from another only in the operand order of kn_mul
        assert counts == {"gated_mlp.json": 24, "gqa_bs1.json": 28, "lora.json": 4, "mha_bs1.json": 21,
                          "mqa_bs1.json": 12, "ntrans_bs1.json": 9, "rmsnorm_bs1.json": 18}


@needs_files
@needs_nvcc
def test_cli_builds_named_files_and_the_card_credits_mirage(tmp_path):
    from click.testing import CliRunner
    from ptxds.cli import cli
    bad = tmp_path / "bad.json"
    bad.write_text('{"a": 1}')
    out = tmp_path / "ds"
    result = CliRunner().invoke(cli, ["build", "--source", "mirage", "--out", str(out), "--arch", "sm_80",
                                      "--jobs", "1", "--silent", "--mugraphs", str(MUGRAPH_DIR / "lora.json"),
                                      "--mugraphs", str(bad)])
    assert result.exit_code == 0, result.output
    assert "mirage: 4 rows written" in result.output
    assert "failed item bad.json: MirageInputError: bad.json: not a muGraph list" in result.output
    card = (out / "README.md").read_text()
    assert "mirage-project/mirage" in card and "de8745d9" in card and "Apache-2.0" in card


# ----------------------------------------------------------------------------- GPU

@pytest.mark.gpu
@needs_files
def test_gpu_verifies_one_file(tmp_path):
    from ptxds.pipeline import run_build
    from verify import verify_dataset
    out = tmp_path / "mirage"
    run_build("mirage", out, BuildOptions(archs=["sm_90a"], extra={"mugraphs": [str(MUGRAPH_DIR / "lora.json")]}),
              jobs=1, progress=False)
    verify_dataset(str(out), str(tmp_path / "verified"), trials=4, timing=False, progress=False)
    from dataset_spec.store.shards import read_table
    rows = read_table(tmp_path / "verified", "kernels", columns=["name", "status"]).to_pylist()
    assert rows and all(r["status"] == "passed" for r in rows), rows
