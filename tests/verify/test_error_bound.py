"""The verifier's per-element error bound on CPU: kernels emulated in float32 (as GPU
kernels compute) pass it on every trial kind, including wide and edge inputs, while a
planted 1% error, and errors confined to large, negative or zero inputs, fail it, for
fp32, fp16 and bf16 alike."""
import numpy as np
import pytest

from dataset_spec.model import Buffer, Problem
from verify.trials.inputs import from_storage, to_storage
from verify.runner import prepare_problem
from helpers import judge

DTYPES = ("float32", "float16", "bfloat16")
KINDS = ["normal", "uniform", "wide", "edge", "stress"]


def f32(values):
    return np.asarray(values, dtype=np.float64).astype(np.float32)


def emulate(op: str, values: dict, problem: Problem, math_input: str = "") -> np.ndarray:
    """A correct kernel: float32 arithmetic on the stored inputs, one rounding at the store."""
    with np.errstate(over="ignore", invalid="ignore", under="ignore", divide="ignore"):
        if op == "vector_add":
            return f32(values["x"]) + f32(values["y"])
        if op == "softmax":
            x = f32(values["x"])
            e = np.exp(x - x.max(axis=-1, keepdims=True))
            return e / e.sum(axis=-1, keepdims=True, dtype=np.float32)
        if op == "rmsnorm":
            x, w = f32(values["x"]), f32(values["w"])
            rstd = np.float32(1) / np.sqrt((x * x).mean(axis=-1, keepdims=True, dtype=np.float32) + np.float32(1e-6))
            return x * rstd * w
        if op == "layernorm":
            x, w, b = f32(values["x"]), f32(values["w"]), f32(values["b"])
            mean = x.mean(axis=-1, keepdims=True, dtype=np.float32)
            var = ((x - mean) ** 2).mean(axis=-1, keepdims=True, dtype=np.float32)
            return (x - mean) / np.sqrt(var + np.float32(1e-5)) * w + b
        if op == "gemm":
            a, b = f32(values["A"]), f32(values["B"])
            if math_input == "tf32":  # tensor cores keep 10 mantissa bits (truncating)
                a = (a.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)
                b = (b.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)
            return a @ b
    raise ValueError(op)


def make_problem(op: str, dtype: str, **params) -> Problem:
    if op == "vector_add":
        bufs = [Buffer("x", dtype, (4096,)), Buffer("y", dtype, (4096,)), Buffer("out", dtype, (4096,), "out")]
    elif op == "softmax":
        bufs = [Buffer("x", dtype, (16, 2048)), Buffer("out", dtype, (16, 2048), "out")]  # outputs ~1/2048
    elif op == "rmsnorm":
        bufs = [Buffer("x", dtype, (32, 512)), Buffer("w", dtype, (512,)), Buffer("out", dtype, (32, 512), "out")]
        params.setdefault("eps", 1e-6)
    elif op == "layernorm":
        bufs = [Buffer("x", dtype, (32, 512)), Buffer("w", dtype, (512,)), Buffer("b", dtype, (512,)),
                Buffer("out", dtype, (32, 512), "out")]
    else:
        bufs = [Buffer("A", dtype, (64, 384)), Buffer("B", dtype, (384, 96)), Buffer("D", dtype, (64, 96), "out")]
        params.setdefault("K", 384)
    return Problem(f"{op}_{dtype}", op, bufs, params=params)


CASES = [(op, dtype) for op in ("vector_add", "softmax", "rmsnorm", "layernorm", "gemm") for dtype in DTYPES]


@pytest.mark.parametrize("op,dtype", CASES)
def test_correct_float32_kernel_passes_every_trial_kind(op, dtype):
    problem = make_problem(op, dtype)
    verdict, prepared = judge(problem, lambda values, ref: emulate(op, values, problem))
    assert [t.kind for t in prepared.trials] == KINDS
    assert verdict.status == "passed", verdict.message
    assert 0 < verdict.max_err_ratio <= 1


@pytest.mark.parametrize("op,dtype", CASES)
def test_one_percent_error_is_caught(op, dtype):
    problem = make_problem(op, dtype)
    verdict, prepared = judge(problem, lambda values, ref: ref * 1.01)
    assert verdict.status == "wrong_result", f"{op} {dtype}: a 1% error passed"
    assert prepared.catches_rel_err < 0.01


def test_tf32_gemm_passes_and_one_percent_fails():
    problem = make_problem("gemm", "float32", math_input="tf32")
    verdict, _ = judge(problem, lambda values, ref: emulate("gemm", values, problem, "tf32"))
    assert verdict.status == "passed", verdict.message
    # the same tf32 kernel judged as a full-fp32 GEMM is not equivalent
    strict = make_problem("gemm", "float32")
    verdict, _ = judge(strict, lambda values, ref: emulate("gemm", values, strict, "tf32"))
    assert verdict.status == "wrong_result"
    verdict, _ = judge(problem, lambda values, ref: ref * 1.01)
    assert verdict.status == "wrong_result"


def _vector_add_defect(defect):
    def kernel(values, ref):
        x, y = f32(values["x"]), f32(values["y"])
        out = x + y
        if defect == "large":
            out = np.where(np.abs(x) < 6, x + y, x - y)
        elif defect == "negative":
            out = np.where(x < 0, -x + y, x + y)
        elif defect == "zero":
            out = np.where(x == 0, np.float32(1), x + y)
        return out
    return kernel


@pytest.mark.parametrize("defect,caught_by", [("large", "wide"), ("negative", "normal"), ("zero", "edge")])
def test_defects_confined_to_part_of_the_domain_are_caught(defect, caught_by):
    problem = make_problem("vector_add", "float32")
    verdict, prepared = judge(problem, _vector_add_defect(defect))
    assert verdict.status == "wrong_result"
    # the kind that exercises the defect catches it on its own
    only = Problem(problem.problem_id, problem.op, problem.buffers, trial_kinds=[caught_by])
    verdict, _ = judge(only, _vector_add_defect(defect))
    assert verdict.status == "wrong_result"


def test_wrong_for_large_fails_the_default_kinds():
    """The bug report: normal and uniform trials alone never reach |x| >= 6, so the default
    kinds must go beyond them, and the defect fails under the defaults."""
    problem = make_problem("vector_add", "float32")
    assert set(problem.trial_kinds) > {"normal", "uniform"}
    verdict, _ = judge(problem, _vector_add_defect("large"))
    assert verdict.status == "wrong_result", verdict.message


def test_cancellation_never_fails_a_correct_gemm():
    """Rows of A orthogonal to columns of B: |D| is tiny next to |A| @ |B|; a correct
    float32 kernel's rounding there is far above a relative tolerance on |D|."""
    problem = make_problem("gemm", "float32")
    verdict, prepared = judge(problem, lambda values, ref: emulate("gemm", values, problem))
    assert verdict.status == "passed"
    ref = prepared.references[0]["D"]
    bound = prepared.specs[0].bounds[0]
    # where terms cancelled, the bound follows |A| @ |B|, far above a relative error on |D|
    assert np.any(bound > 1e-5 * np.abs(ref))


def test_wide_and_edge_inputs_stay_in_the_op_domain():
    for op in ("vector_add", "softmax", "rmsnorm", "layernorm", "gemm"):
        for dtype in DTYPES:
            problem = make_problem(op, dtype)
            prepared = prepare_problem(problem, "g", None)
            for trial, ref in zip(prepared.trials, prepared.references):
                if trial.kind == "stress":  # NaN and infinities are deliberate there
                    continue
                for name, value in ref.items():
                    assert np.all(np.isfinite(value)), f"{op} {dtype} {trial.kind}: non-finite reference"
                for name, value in trial.values.items():
                    assert np.all(np.isfinite(value))
            edge = prepared.trials[KINDS.index("edge")].values
            first = next(iter(edge.values()))
            assert np.any(first == 0) and np.any(np.signbit(first) & (first == 0)), f"{op} {dtype}: no -0.0"
            wide = next(iter(prepared.trials[KINDS.index("wide")].values.values()))
            magnitudes = np.abs(wide[wide != 0])
            assert np.log2(magnitudes.max() / magnitudes.min()) > 12, f"{op} {dtype}: wide spans too few binades"


def test_edge_values_are_representable_and_reach_the_extremes():
    from dataset_spec.numerics import FORMATS
    from verify.trials.inputs import edge_values
    for dtype in DTYPES:
        fmt = FORMATS[dtype]
        values = edge_values(dtype, (fmt.tiny, 100.0))
        assert np.array_equal(from_storage(to_storage(values, dtype), dtype), values), dtype
        assert fmt.subnormal_min in values and (fmt.tiny - fmt.subnormal_min) in values and -fmt.tiny in values
        assert values.max() <= 100.0 and values.max() > 99.0
        assert np.signbit(values[1]) and values[1] == 0
        narrow = edge_values(dtype, (0.5, 100.0))  # a domain above the subnormals excludes them
        assert np.all((np.abs(narrow) >= 0.5 * (1 - 2 * fmt.unit_roundoff)) | (narrow == 0))
