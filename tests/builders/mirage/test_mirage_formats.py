"""CPU tests of the muGraph formats Mirage has written: the older type enum (float16 = 921,
``tb_accum_*_op``) and the newer one (float16 = 941, ``tb_forloop_accum_*_op``), on a
hand-written qknorm-style muGraph (rms_norm, a last-dim sum and a (1,1,n) x (1,m,1)
broadcast, as qknorm_gqa's first kernel has), built through the CLI; and one-line errors
for types and renamed ops without the same meaning.
"""
from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from builders.mirage.builder import analyse_file, plan_of
from builders.mirage.graph import parse_mugraph
from builders.mirage.interpret import run_plan
from dataset_spec import mugraph as mugraph_semantics
from helpers import needs_nvcc

OLD = {"dtype": 921, "nored": "tb_accum_nored_op", "sum": "tb_accum_red_ld_sum_op"}
NEW = {"dtype": 941, "nored": "tb_forloop_accum_nored_op", "sum": "tb_forloop_accum_red_ld_sum_op"}
BATCH, ROWS, COLS = 2, 4, 64


def qknorm_style(fmt: dict) -> list:
    """O[b, r, c] = sum_d rms_norm(Q)[b, r, d] * K[b, 0, c]: Q (2, 4, 64), K (2, 1, 64),
    one block per batch."""
    def t(guid, dims, after=False, smem=False):
        raw = {"guid": guid, "dim": list(dims) + [0] * (4 - len(dims)), "num_dims": len(dims),
               "data_type": fmt["dtype"], "layout": "SmemRowMajor" if smem else "DmemRowMajor"}
        if smem:
            raw["after_accum"] = after
        return raw
    q, k, o = (1, (BATCH, ROWS, COLS)), (2, (BATCH, 1, COLS)), (3, (BATCH, ROWS, COLS))
    x_map = {"x": 0, "y": -1, "z": -1}
    tb = [
        {"op_type": "tb_input_op", "input_tensors": [], "output_tensors": [t(10, (1, ROWS, COLS), smem=True)],
         "dtensor": t(*q), "input_map": x_map, "forloop_dim": -1},
        {"op_type": "tb_input_op", "input_tensors": [], "output_tensors": [t(11, (1, 1, COLS), smem=True)],
         "dtensor": t(*k), "input_map": x_map, "forloop_dim": -1},
        {"op_type": "tb_rms_norm_op", "input_tensors": [t(10, (1, ROWS, COLS), smem=True)],
         "output_tensors": [t(12, (1, ROWS, COLS), smem=True)]},
        {"op_type": fmt["sum"], "input_tensors": [t(12, (1, ROWS, COLS), smem=True)],
         "output_tensors": [t(13, (1, ROWS, 1), True, smem=True)]},
        {"op_type": fmt["nored"], "input_tensors": [t(11, (1, 1, COLS), smem=True)],
         "output_tensors": [t(14, (1, 1, COLS), True, smem=True)]},
        {"op_type": "tb_mul_op", "input_tensors": [t(14, (1, 1, COLS), True, smem=True),
                                                   t(13, (1, ROWS, 1), True, smem=True)],
         "output_tensors": [t(15, (1, ROWS, COLS), True, smem=True)]},
        {"op_type": "tb_output_op", "input_tensors": [t(15, (1, ROWS, COLS), True, smem=True)],
         "output_tensors": [], "dtensor": t(*o), "output_map": x_map},
    ]
    return [
        {"op_type": "kn_input_op", "input_strides": [ROWS * COLS, COLS, 1], "output_tensors": [t(*q)]},
        {"op_type": "kn_input_op", "input_strides": [COLS, COLS, 1], "output_tensors": [t(*k)]},
        {"op_type": "kn_customized_op", "input_tensors": [t(*q), t(*k)], "output_tensors": [t(*o)],
         "bgraph": {"grid_dim": {"x": BATCH, "y": 1, "z": 1}, "block_dim": {"x": 128, "y": 1, "z": 1},
                    "forloop_range": 1, "reduction_dimx": 64, "smem_offset": 0, "operators": tb}},
        {"op_type": "kn_output_op", "input_tensors": [t(*o)], "output_strides": [ROWS * COLS, COLS, 1]},
    ]


def formula(q, k):
    normed = q / np.sqrt(np.mean(q * q, axis=-1, keepdims=True))
    return normed.sum(-1, keepdims=True) * k


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    q = rng.normal(0.0, 0.5, (BATCH, ROWS, COLS)).astype(np.float16).astype(np.float64)
    k = rng.normal(0.0, 0.5, (BATCH, 1, COLS)).astype(np.float16).astype(np.float64)
    return q, k


@pytest.mark.parametrize("fmt", [OLD, NEW], ids=["older-enum", "newer-enum"])
def test_both_formats_evaluate_and_interpret_to_the_formula(fmt, tmp_path):
    raw = qknorm_style(fmt)
    q, k = _inputs()
    want = formula(q, k)
    assert np.allclose(mugraph_semantics.evaluate(raw, [q, k]), want, rtol=1e-12, atol=1e-12)
    path = tmp_path / "qk.json"
    path.write_text(json.dumps([raw, raw]))
    info = analyse_file(path)  # the agreement check runs here
    assert info.problem.op == "mugraph"
    graph = parse_mugraph(raw, "qk.json", 0)
    assert [op.kind for op in graph.ops[0].bgraph.ops][2:6] == ["rms_norm", "accum_red_ld_sum",
                                                                  "accum_nored", "mul"]
    names = list(info.input_names)
    got = run_plan(plan_of(info, graph), dict(zip(names, (q, k))))[info.output_name].astype(np.float64)
    assert np.abs(got - want).max() <= 2e-2 * np.abs(want).max()


def test_a_file_mixing_both_formats_agrees_with_itself(tmp_path):
    path = tmp_path / "mixed_formats.json"
    path.write_text(json.dumps([qknorm_style(OLD), qknorm_style(NEW)]))
    info = analyse_file(path)
    assert [g.index for g in info.graphs] == [0, 1]


def test_a_broken_new_format_member_is_refused_by_the_agreement_check(tmp_path):
    """muGraph 1 takes exp of Q where muGraph 0 normalises it: a different function."""
    bad = qknorm_style(NEW)
    bad[2]["bgraph"]["operators"][2]["op_type"] = "tb_exp_op"
    path = tmp_path / "qk_bad.json"
    path.write_text(json.dumps([qknorm_style(NEW), bad]))
    from builders.mirage import MirageInputError
    with pytest.raises(MirageInputError, match=r"qk_bad\.json: muGraphs \[1\] compute a different function"):
        analyse_file(path)


@pytest.mark.parametrize("dtype, meaning", [(940, "float64 (older enum) or bfloat16 (newer)"),
                                            (950, "float32 (newer enum)"), (123, "not a Mirage data type")])
def test_other_data_types_are_one_line_naming_file_index_and_type(dtype, meaning, tmp_path):
    raw = qknorm_style(NEW)
    raw[1]["output_tensors"][0]["data_type"] = dtype
    from builders.mirage.graph import MuGraphError, load_file
    path = tmp_path / "typed.json"
    path.write_text(json.dumps([qknorm_style(NEW), raw]))
    graphs = load_file(path)
    assert not isinstance(graphs[0], MuGraphError)
    message = str(graphs[1])
    assert "\n" not in message
    assert message.startswith(f"typed.json: muGraph 1: op tensor: tensor 2 has data_type {dtype} ({meaning})")
    assert "921" in message and "941" in message


@pytest.mark.parametrize("renamed", ["tb_forloop_accum_max_op", "tb_forloop_accum_nored_rescale_op",
                                     "tb_forloop_accum_red_ld_mean_op"])
def test_newer_accumulators_of_other_meaning_are_one_line(renamed, tmp_path):
    raw = qknorm_style(NEW)
    raw[2]["bgraph"]["operators"][4]["op_type"] = renamed
    from builders.mirage.graph import MuGraphError
    with pytest.raises(MuGraphError, match=rf"^new\.json: muGraph 3: op {renamed}: not supported by the lowering"):
        parse_mugraph(raw, "new.json", 3)


@needs_nvcc
def test_cli_builds_both_formats_for_both_archs(tmp_path):
    from click.testing import CliRunner
    from ptxds.cli import cli
    files = []
    for name, fmt in (("qk_old.json", OLD), ("qk_new.json", NEW)):
        path = tmp_path / name
        path.write_text(json.dumps([qknorm_style(fmt)]))
        files += ["--mugraphs", str(path)]
    out = tmp_path / "ds"
    result = CliRunner().invoke(cli, ["build", "--source", "mirage", "--out", str(out), "--arch", "sm_90a,sm_80",
                                      "--jobs", "1", "--silent", *files])
    assert result.exit_code == 0, result.output
    rows = [r for f in sorted(out.glob("kernels/**/*.parquet")) for r in pq.read_table(f).to_pylist()]
    assert sorted((r["group_id"], r["arch"], r["status"]) for r in rows) == [
        ("mirage/qk_new", "sm_80", "built"), ("mirage/qk_new", "sm_90a", "built"),
        ("mirage/qk_old", "sm_80", "built"), ("mirage/qk_old", "sm_90a", "built")]
    by_arch = {}
    for r in rows:  # the same muGraph in either format lowers to the same kernels
        by_arch.setdefault(r["arch"], set()).add(r["ptx_hash"])
    assert all(len(h) == 1 for h in by_arch.values()), by_arch
    problem = json.loads(rows[0]["problem"])
    ranges = problem["params"]["input_range"]
    assert sorted(ranges) == ["in0", "in1"]
    assert all(0 < lo < hi < np.inf for lo, hi in ranges.values()), ranges
