"""Value coverage (dataset_spec/coverage.py): every op of the registry declares its items,
and the default trial plan, drawn on the host generator, reaches every one of them on a
representative problem; the record ``ptxds verify`` keeps and the card's table."""
from __future__ import annotations

import numpy as np
import pytest

from dataset_spec.coverage import CoverageItem, coverage_items, measure, measure_trials, missing
from dataset_spec.model import Buffer, Distribution, Problem
from dataset_spec.ops import OPS, get_op
from dataset_spec.ops.blockwise_gemm import blockwise_problem
from dataset_spec.ops.conv_nhwc import conv_buffers, conv_shapes
from dataset_spec.ops.grouped_blockwise_gemm import make_grouped_blockwise_problem
from dataset_spec.ops.grouped_complex_gemm import make_grouped_complex_problem
from dataset_spec.ops.grouped_gemm import make_grouped_problem
from dataset_spec.trials import trial_count
from verify.trials.inputs import make_trial_inputs

from test_complex_gemm import complex_problem
from test_mixed_input_gemm import mixed_problem
from test_sparse_gemm import sparse_problem

MUGRAPH_SCALE = {"input_range": {"X": [2.0 ** -10, 2.0 ** 10]}}


def _gemm(a="float16", out="float16", m=64, n=48, k=96, beta=0.0, layout_a="row", layout_b="row", alpha=1.0):
    buffers = [Buffer("A", a, (m, k) if layout_a == "row" else (k, m)),
               Buffer("B", a, (k, n) if layout_b == "row" else (n, k)),
               Buffer("C", out if out in ("float16", "float32", "bfloat16") else "float32", (m, n)),
               Buffer("D", out, (m, n), "out")]
    return Problem(f"gemm_{a}_{out}_{beta}_{layout_a}{layout_b}", "gemm", buffers,
                   {"M": m, "N": n, "K": k, "alpha": alpha, "beta": beta, "layout_a": layout_a,
                    "layout_b": layout_b})


def _rows(op, dtype="float16", rows=64, n=256, extra=()):
    buffers = [Buffer("x", dtype, (rows, n))] + [Buffer(name, dtype, (n,)) for name in extra]
    return Problem(op, op, buffers + [Buffer("out", dtype, (rows, n) if op != "row_sum" else (rows,), "out")])


def _conv(kind, dims=2):
    spatial, taps = ((6, 6), (3, 3)) if dims == 2 else ((4, 4, 4), (3, 3, 3))
    shapes = conv_shapes(2, spatial, 16, 16, taps, (1,) * dims, (1,) * dims, (1,) * dims, 1)
    buffers = conv_buffers(kind, shapes, "float16", "float16", "float16", "")
    return Problem(f"conv{dims}d_{kind}", f"conv{dims}d_{kind}", buffers,
                   params={"stride": [1] * dims, "padding": [1] * dims, "dilation": [1] * dims, "groups": 1})


def _llm(op, names, shapes, out_shape, input_range=(2.0 ** -6, 2.0)):
    buffers = [Buffer(name, "float16", shape) for name, shape in zip(names, shapes)]
    return Problem(op, op, buffers + [Buffer("O", "float16", out_shape, "out")],
                   {"input_range": {name: list(input_range) for name in names}})


def representative(op: str) -> Problem:
    """A problem of ``op`` of a size its trials can cover (every binade of a wide domain
    needs about twice as many elements as binades)."""
    if op == "gemm":
        return _gemm()
    if op == "batch_matmul":
        return Problem("bmm", "batch_matmul", [Buffer("A", "float16", (2, 32, 64)), Buffer("B", "float16", (2, 64, 24)),
                                               Buffer("C", "float16", (2, 32, 24), "out")])
    if op == "grouped_gemm":
        dtypes = {"A": "float16", "B": "float16", "C": "float16", "D": "float16"}
        return make_grouped_problem("grouped", [(48, 64, 96), (16, 32, 320)], dtypes,
                                    {"a": "row", "b": "col", "c": "row"}, 1.0, 0.0,
                                    extra_params={"accumulator": "float32"})
    if op in ("softmax", "row_sum"):
        return _rows(op)
    if op == "rmsnorm":
        return _rows(op, extra=("w",))
    if op == "layernorm":
        return _rows(op, extra=("w", "b"))
    if op == "add_rmsnorm":
        rows, row = (64, 256), (256,)
        return Problem(op, op, [Buffer("x", "float16", rows), Buffer("r", "float16", rows), Buffer("w", "float16", row),
                                Buffer("y", "float16", rows, "out"), Buffer("s", "float16", rows, "out"),
                                Buffer("rstd", "float32", (64,), "out")], {"eps": 1e-6})
    if op in ("swiglu", "geglu"):
        return Problem(op, op, [Buffer("a", "float16", (64, 256)), Buffer("b", "float16", (64, 256)),
                                Buffer("c", "float16", (64, 256), "out")])
    if op == "rope":
        return Problem(op, op, [Buffer("q", "float16", (2, 8, 4, 64), "inout"),
                                Buffer("k", "float16", (2, 8, 2, 64), "inout"),
                                Buffer("cos", "float32", (1, 8, 64)), Buffer("sin", "float32", (1, 8, 64))])
    if op == "cross_entropy":
        return Problem(op, op, [Buffer("x", "float32", (64, 512), "inout"), Buffer("target", "int64", (64,)),
                                Buffer("loss", "float32", (64,), "out"), Buffer("lse", "float32", (64,), "out")],
                       {"reduction": "mean", "label_smoothing": 0.1})
    if op == "vector_add":
        n = 4096
        return Problem("va", "vector_add", [Buffer("x", "float32", (n,)), Buffer("y", "float32", (n,)),
                                            Buffer("out", "float32", (n,), "out")])
    if op == "square":
        return Problem("sq", "square", [Buffer("x", "float32", (2048,)), Buffer("out", "float32", (2048,), "out")])
    if op == "smith_waterman":
        return Problem("sw", "smith_waterman", [Buffer("query", "int8", (8, 32)), Buffer("target", "int8", (8, 32)),
                                                Buffer("row_best", "int32", (8, 32), "out")],
                       {"match": 2, "mismatch": -1, "gap_open": 3, "gap_extend": 1})
    if op == "conv2d_bias_relu":
        return Problem("cbr", "conv2d_bias_relu", [Buffer("X", "float32", (2, 8, 8, 8)),
                                                   Buffer("W", "float32", (8, 8, 3, 3)), Buffer("bias", "float32", (8,)),
                                                   Buffer("Y", "float32", (2, 8, 8, 8), "out")], {"padding": 1})
    if op == "depthwise_conv2d":
        return Problem("dw", "depthwise_conv2d", [Buffer("X", "float32", (2, 8, 8, 8)),
                                                  Buffer("W", "float32", (8, 1, 3, 3)),
                                                  Buffer("Y", "float32", (2, 8, 8, 8), "out")], {"padding": 1})
    if op.startswith("conv2d_") or op.startswith("conv3d_"):
        return _conv(op.split("_", 1)[1], int(op[4]))
    if op == "custom":
        source = "def neg(inputs, problem):\n    return {'out': -inputs['x']}\n"
        return Problem("c", "custom", [Buffer("x", "float32", (256,)), Buffer("out", "float32", (256,), "out")],
                       {"reference": "coverage_ref_mod:neg", "reference_source": source})
    if op == "attention":
        return _llm(op, ("Q", "K", "V"), ((2, 16, 32), (2, 32, 64), (2, 64, 32)), (2, 16, 32))
    if op == "rmsnorm_matmul":
        return _llm(op, ("X", "W"), ((16, 64), (64, 32)), (16, 32))
    if op == "gated_mlp":
        return _llm(op, ("X", "W1", "W2"), ((16, 64), (64, 32), (64, 32)), (16, 32))
    if op == "lora":
        return _llm(op, ("X", "W", "A", "B"), ((16, 64), (64, 32), (64, 16), (16, 32)), (16, 32))
    if op == "ntrans":
        return _llm(op, ("H", "X", "alpha"), ((16, 64), (16, 64), (64,)), (16, 64))
    if op == "mixed_input_gemm":
        return mixed_problem()
    if op == "sparse_gemm":
        return sparse_problem()
    if op == "complex_gemm":
        return complex_problem()
    if op == "blockwise_scaled_gemm":
        return blockwise_problem("bw", 64, 128, 256, {"A": "float8_e4m3", "B": "float8_e4m3", "C": "float32",
                                                      "D": "float32"}, (1, 128), (128, 128),
                                 {"a": "row", "b": "col", "c": "row", "sfa": "col", "sfb": "col"})
    if op == "grouped_blockwise_scaled_gemm":
        return make_grouped_blockwise_problem("gbw", [(64, 128, 256), (16, 128, 128)],
                                              {"A": "float8_e4m3", "B": "float8_e4m3", "C": "bfloat16", "D": "bfloat16"},
                                              (1, 128), (128, 128),
                                              {"a": "row", "b": "col", "c": "col", "sfa": "col", "sfb": "col"}, 1.0, 0.0)
    if op == "grouped_complex_gemm":
        return make_grouped_complex_problem("gcx", [(48, 64, 96), (16, 64, 96)],
                                            {"A": "float16", "B": "float16", "C": "float16", "D": "float16"},
                                            {"a": "row", "b": "col", "c": "row"}, ("conj", "none"), 1.0, 0.0)
    return None


def drawn(problem: Problem) -> dict:
    """{item key: count} over the problem's default trials, drawn on the host, with its
    float64 references."""
    op = get_op(problem.op)
    trials = [make_trial_inputs(problem, "g", t) for t in range(trial_count(problem))]
    with np.errstate(all="ignore"):
        references = [op.reference(dict(t.values), problem) for t in trials]
    return measure_trials(problem, trials, references)


UNBUILT = {"mugraph"}  # its problems carry a muGraph (tests/test_mirage_*.py); its items are the per-buffer ones


@pytest.mark.parametrize("op", sorted(set(OPS) - UNBUILT))
def test_every_declared_item_is_drawn(op):
    problem = representative(op)
    assert problem is not None, f"no representative problem for {op}: add one"
    counts = drawn(problem)
    assert counts, f"{op} declares no coverage item"
    assert missing(counts) == [], f"{op}: declared but never drawn: {missing(counts)}"


def test_the_structured_items_each_op_family_declares():
    keys = {op: {i.key for i in coverage_items(representative(op))} for op in ("gemm", "softmax", "rmsnorm")}
    assert {"A:zero_row:-1", "A:zero_slice:-1", "B:zero_row:0", "B:zero_slice:0", "A:nan", "B:inf",
            "D:subnormal"} <= keys["gemm"]
    assert {"x:negative_spread_row:-1", "x:max_first_far:-1", "x:max_last_far:-1"} <= keys["softmax"]
    assert {"x:inf_row:-1", "x:neg_inf_row:-1"} <= keys["rmsnorm"]
    beta0 = {i.key for i in coverage_items(_gemm(beta=0.0))}
    assert "C:nonfinite_all" in beta0 and "C:nonfinite_all" not in {i.key for i in coverage_items(_gemm(beta=0.5))}
    fp8 = {i.key for i in coverage_items(_gemm("float8_e4m3", "float8_e4m3", k=128))}
    assert "D:top_binade" in fp8 and "D:subnormal" in fp8
    small = {i.key for i in coverage_items(_gemm("int8", "int32"))}
    assert {"D:int:-1", "D:int:0", "D:int:1", "A:int:-128", "A:int:-127", "A:int:126", "A:int:127"} <= small


@pytest.mark.parametrize("problem", [
    _gemm("float8_e4m3", "float8_e4m3", k=128), _gemm("float8_e4m3", "float32", k=128),
    _gemm("int8", "int32"), _gemm("int8", "int8", alpha=2.0 ** -9), _gemm("float16", "int8", alpha=0.25),
    _gemm("float16", "float16", layout_a="col", layout_b="col"), _gemm("bfloat16", "bfloat16", beta=0.5),
    _rows("softmax", "bfloat16"), _rows("rmsnorm", "float32", extra=("w",)),
], ids=lambda p: p.problem_id)
def test_other_dtypes_and_layouts_draw_every_item(problem):
    counts = drawn(problem)
    assert missing(counts) == [], missing(counts)


def test_a_narrowed_plan_shows_what_it_no_longer_draws():
    problem = _gemm()
    narrowed = Problem(problem.problem_id, "gemm", problem.buffers, problem.params, trial_kinds=["normal", "uniform"])
    lost = set(missing(drawn(narrowed)))
    assert {"A:zero_row:-1", "B:inf", "C:nonfinite_all", "D:subnormal", "A:subnormal"} <= lost


def test_measure_counts_values_rows_and_slices():
    problem = Problem("s", "softmax", [Buffer("x", "float32", (3, 4)), Buffer("out", "float32", (3, 4), "out")])
    x = np.array([[-1.0, -200.0, -300.0, -0.5], [300.0, 0.0, 1.0, 2.0], [0.0, -0.0, np.inf, 1e-40]])
    items = [CoverageItem("x", "negative_spread_row", -1), CoverageItem("x", "max_first_far", -1),
             CoverageItem("x", "max_last_far", -1), CoverageItem("x", "zero"), CoverageItem("x", "neg_zero"),
             CoverageItem("x", "inf_row", -1), CoverageItem("x", "subnormal"), CoverageItem("x", "binade", 8),
             CoverageItem("x", "zero_slice", -1)]
    counts = measure(problem, items, {"x": x})
    assert counts == {"x:negative_spread_row:-1": 1, "x:max_first_far:-1": 1, "x:max_last_far:-1": 0,
                      "x:zero": 2, "x:neg_zero": 1, "x:inf_row:-1": 1, "x:subnormal": 1, "x:binade:8": 2,
                      "x:zero_slice:-1": 0}


# --- quantised outputs: float math, integer output ---------------------------------------

def _quantised(k=4096, m=128, n=128, out="int8", alpha=2.0 ** -6):
    """float16 operands of mean 1 (a float32 partial sum grows to K, so its roundings
    reach the output's rounding boundaries), alpha bringing the sums into int8's range."""
    problem = _gemm("float16", out, m=m, n=n, k=k, alpha=alpha)
    init = Distribution("normal", {"mean": 1.0, "std": 1.0})
    buffers = [Buffer(b.name, b.dtype, b.shape, b.role, init=init) if b.name in ("A", "B") else b
               for b in problem.buffers]
    return Problem(problem.problem_id, "gemm", buffers, problem.params)


def _float32_kernel(problem):
    """A correct kernel: float32 products summed in float32 one K step at a time (a
    sequential order, not the reference's), alpha in float32, then rounded to nearest
    even and saturated."""
    def kernel(values, ref):
        a = values["A"].astype(np.float32)
        b = values["B"].astype(np.float32)
        acc = np.zeros((a.shape[0], b.shape[1]), dtype=np.float32)
        for k in range(a.shape[1]):
            acc += a[:, k, None] * b[None, k, :]
        acc = acc * np.float32(problem.params["alpha"])
        return np.clip(np.rint(acc.astype(np.float64)), -128, 127)
    return kernel


def test_quantised_outputs_draw_no_nan_or_infinity():
    from dataset_spec.trials import trial_kind
    problem = _quantised(k=256)
    stress = next(t for t in range(trial_count(problem)) if trial_kind(problem, t) == "stress")
    values = make_trial_inputs(problem, "g", stress).values
    assert all(np.isfinite(values[name]).all() for name in ("A", "B"))
    # a float output of the same operands still gets its NaN row and infinity column
    floats = make_trial_inputs(_gemm("float16", "float16", k=256), "g", stress).values
    assert np.isnan(floats["A"]).any() and np.isinf(floats["B"]).any()


def test_a_float32_sum_rounded_to_int8_passes_where_the_pre_rounding_value_is_near_a_boundary():
    from helpers import judge
    problem = _quantised()
    verdict, prepared = judge(problem, _float32_kernel(problem))
    assert verdict.status == "passed", verdict.message
    # the allowance was needed: the float32 sum rounds to the other side of .5 somewhere
    kernel = _float32_kernel(problem)
    flips = sum(int(np.count_nonzero(kernel(t.values, r["D"]) != r["D"]))
                for t, r in zip(prepared.trials, prepared.references))
    assert flips > 0
    # on ordinary data the allowance is one step, at few elements (wide data that cancels
    # has float bounds of many steps: the float32 sum may then really land anywhere in them)
    for trial, bound in zip(prepared.trials, prepared.specs[0].bounds):
        if trial.kind in ("normal", "uniform"):
            assert set(np.unique(bound)) <= {0.0, 1.0} and np.mean(bound > 0) < 0.01


def test_off_by_one_everywhere_or_far_from_a_boundary_fails():
    from helpers import judge
    problem = _quantised(k=512, m=64, n=64)
    verdict, _ = judge(problem, lambda values, ref: np.clip(ref + 1, -128, 127))
    assert verdict.status == "wrong_result"

    def one_far(values, ref):
        exact = (values["A"] @ values["B"]) * problem.params["alpha"]
        distance = np.abs(exact - np.floor(exact) - 0.5)  # from the nearest rounding boundary
        inside = (np.abs(ref) < 100)
        index = np.unravel_index(np.argmax(np.where(inside, distance, -1)), ref.shape)
        out = ref.copy()
        out[index] += 1
        return out
    verdict, _ = judge(problem, one_far)
    assert verdict.status == "wrong_result", verdict.message


def test_integer_operands_keep_an_exact_bound():
    from helpers import judge
    problem = _gemm("int8", "int8", alpha=2.0 ** -9)
    _, prepared = judge(problem, lambda values, ref: ref)
    assert all(not np.any(bound) for bound in prepared.specs[0].bounds)


def test_the_card_tables_coverage_per_op():
    import json
    from dataset_spec.store.card import _coverage_table, coverage_by_op
    rows = [{"group_id": g, "op": op, "problem": "{}",
             "provenance": json.dumps({"verify": {"coverage": record}})}
            for g, op, record in (("g1", "gemm", {"A:zero_row:-1": 3, "A:binade:-3": 0, "B:inf": 2}),
                                  ("g1", "gemm", {"A:zero_row:-1": 3, "A:binade:-3": 0, "B:inf": 2}),
                                  ("g2", "gemm", {"A:zero_row:-1": 1, "A:binade:-4": 1, "B:inf": 1}),
                                  ("g3", "softmax", {"x:max_last_far:-1": 0}))]
    by_op = coverage_by_op(rows)
    assert by_op["gemm"][:4] == (2, 5, 6, 1) and by_op["softmax"][:4] == (1, 0, 1, 0)
    table = _coverage_table(rows)
    assert "| gemm | 2 | 5 / 6 | 1 / 2 | `A:binade` (1) |" in table
    assert "| softmax | 1 | 0 / 1 | 0 / 1 | `x:max_last_far:-1` (1) |" in table


class _TensorTrial:
    def __init__(self, values):
        self.values = values


@pytest.mark.parametrize("op", sorted(set(OPS) - UNBUILT))
def test_trials_held_as_tensors_give_the_numpy_counts(op):
    """Trials drawn on a GPU are counted where they live (dataset_spec/coverage_tensor.py):
    the counts equal numpy's for the same values, item by item (torch on the CPU stands in)."""
    torch = pytest.importorskip("torch")
    problem = representative(op)
    spec = get_op(problem.op)
    trials = [make_trial_inputs(problem, "g", t) for t in range(trial_count(problem))]
    with np.errstate(all="ignore"):
        references = [spec.reference(dict(t.values), problem) for t in trials]

    def tensors(values: dict) -> dict:
        return {k: torch.from_numpy(np.array(v, dtype=np.float64)) for k, v in values.items()}
    calls = []

    def on_device(fn, *args):
        calls.append(fn)
        return fn(*args)
    on_host = measure_trials(problem, trials, references)
    held = measure_trials(problem, [_TensorTrial(tensors(dict(t.values))) for t in trials],
                          [tensors(r) for r in references], on_device=on_device)
    assert held == on_host
    assert calls, "no buffer was counted as a tensor"
