"""mixed_input_gemm: the weight-only quantised GEMM's reference (dequantised as CUTLASS's
mixed-input mainloop does), its error bound (a kernel's rounded result passes on every
trial kind, a 1% error fails) and its problem checks."""
from __future__ import annotations

import numpy as np
import pytest

from dataset_spec.model import Buffer, Distribution, Problem, SpecError
from dataset_spec.ops import get_op
from verify.trials.inputs import bf16_to_float, float_to_bits
from verify.judge.outcome import CheckResult, TrialRun, classify
from verify.runner import prepare_problem


def mixed_problem(narrow="int4", wide="bfloat16", mode="scale", m=64, n=48, k=256, group=128, out=None):
    groups = k // group
    buffers = [Buffer("A", narrow, (m, k)),
               Buffer("S", wide, (groups, m), init=Distribution("normal", {"mean": 0.0, "std": 0.125}))]
    if mode == "scale_zero":
        buffers.append(Buffer("Z", wide, (groups, m), init=Distribution("normal", {"mean": 0.0, "std": 0.5})))
    buffers += [Buffer("B", wide, (n, k)), Buffer("D", out or wide, (m, n), "out")]
    return Problem(f"mixed/{narrow}/{wide}/{mode}/{m}x{n}x{k}/g{group}", "mixed_input_gemm", buffers,
                   {"M": m, "N": n, "K": k, "layout_a": "row", "layout_b": "col", "layout_c": "row",
                    "group_size": group, "mode": mode, "accumulator": "float32", "math_input": ""})


def _round(values, dtype):
    """Round to bfloat16 through float32 (exact first step for the values rounded here:
    products of a narrow value and a 16-bit one, and float32 sums) or to float16."""
    if dtype == "bfloat16":
        return bf16_to_float(float_to_bits(np.asarray(values, dtype=np.float32), "bfloat16"))
    return np.asarray(values, dtype=np.float64).astype(np.float16).astype(np.float64)


def kernel_like(values: dict, problem: Problem, fused: bool = False) -> np.ndarray:
    """What the mainloop computes: W = rnd(rnd(A S) + Z) in the wide type (``fused``: the
    contracted rnd(A S + Z)), float32 products and sums, one rounding to D's type."""
    p = problem.params
    m, k, g = p["M"], p["K"], p["group_size"]
    wide = problem.buffer("S").dtype
    a = values["A"].reshape(m, k)
    s = np.repeat(values["S"].reshape(k // g, m).T, g, axis=1)
    w = _round(a * s, wide)
    if p["mode"] == "scale_zero":
        z = np.repeat(values["Z"].reshape(k // g, m).T, g, axis=1)
        w = _round((a * s).astype(np.float32) + z.astype(np.float32), wide) if fused else _round(
            w.astype(np.float32) + z.astype(np.float32), wide)
    b = values["B"].reshape(problem.buffer("B").shape).T  # col-major B: stored (N, K)
    d = w.astype(np.float32) @ b.astype(np.float32)
    return _round(d, problem.buffer("D").dtype)


def test_reference_dequantises_per_group_along_k():
    problem = mixed_problem("int4", mode="scale_zero", m=2, n=1, k=4, group=2)
    a = np.array([[1, -2, 3, 7], [-8, 0, 5, 1]], dtype=np.float64)
    s = np.array([[0.5, 2.0], [0.25, -1.0]])  # (K / g, M): s[j, m] scales row m's group j
    z = np.array([[1.0, 0.0], [0.0, 3.0]])
    b = np.array([[1.0, 10.0, 100.0, 1000.0]])  # (N, K), col-major
    ref = get_op("mixed_input_gemm").reference({"A": a, "S": s, "Z": z, "B": b}, problem)["D"]
    w = np.array([[1 * 0.5 + 1, -2 * 0.5 + 1, 3 * 0.25, 7 * 0.25],
                  [-8 * 2.0 + 0, 0 * 2.0, 5 * -1.0 + 3, 1 * -1.0 + 3]])
    assert np.array_equal(ref, w @ b.T)


def _member(prepared, problem, change=lambda out: out, fused=False):
    runs = []
    for trial in prepared.trials:
        out = kernel_like(trial.values, problem, fused)
        runs.append(TrialRun(trial.trial, {"D": float_to_bits(change(out), problem.buffer("D").dtype)}))
    return CheckResult(runs)


CASES = [("int4", "bfloat16", "scale"), ("int4", "float16", "scale_zero"), ("uint4", "bfloat16", "scale_zero"),
         ("int8", "float16", "scale"), ("uint8", "bfloat16", "scale_zero"), ("int2", "float16", "scale"),
         ("float8_e4m3", "bfloat16", "scale_zero"), ("float8_e5m2", "float16", "scale")]


@pytest.mark.parametrize("narrow,wide,mode", CASES)
def test_rounded_kernel_passes_and_one_percent_fails_on_every_trial_kind(narrow, wide, mode):
    problem = mixed_problem(narrow, wide, mode)
    prepared = prepare_problem(problem, "mixed", None, "numpy")
    assert not prepared.refusal, prepared.refusal
    assert {t.kind for t in prepared.trials} >= {"normal", "uniform", "wide", "edge", "stress"}
    good = classify(_member(prepared, problem), prepared.specs, prepared.references)
    assert good.status == "passed", good.message
    assert good.max_err_ratio > 0  # the rounding is real and inside the bound
    fused = classify(_member(prepared, problem, fused=True), prepared.specs, prepared.references)
    assert fused.status == "passed", fused.message
    off = classify(_member(prepared, problem, lambda out: out * 1.01), prepared.specs, prepared.references)
    assert off.status == "wrong_result"

    def one_element(out):
        out = out.copy()
        i = np.unravel_index(np.argmax(np.abs(out)), out.shape)
        out[i] *= 1.01
        return out
    one = classify(_member(prepared, problem, one_element), prepared.specs, prepared.references)
    assert one.status == "wrong_result"


def test_unscaled_dequantisation_is_caught():
    """A kernel that forgets the zero points (or applies a neighbouring group's scale) fails."""
    problem = mixed_problem("int4", "bfloat16", "scale_zero")
    prepared = prepare_problem(problem, "mixed", 2, "numpy")
    runs = []
    for trial in prepared.trials:
        values = dict(trial.values, Z=np.zeros_like(trial.values["Z"]))
        runs.append(TrialRun(trial.trial, {"D": float_to_bits(kernel_like(values, problem), "bfloat16")}))
    assert classify(CheckResult(runs), prepared.specs, prepared.references).status == "wrong_result"


def test_round_to_matches_the_formats_own_rounding():
    from dataset_spec.ops.mixed_input_gemm import round_to
    rng = np.random.default_rng(3)
    values = np.concatenate([rng.normal(0, 1, 4000) * 2.0 ** rng.integers(-30, 16, 4000), [0.0, -0.0, 1e-9]])
    with np.errstate(over="ignore"):
        as_f16 = values.astype(np.float16).astype(np.float64)
    assert np.array_equal(round_to(values, "float16"), as_f16)
    exact32 = values.astype(np.float32).astype(np.float64)  # bf16 through float32 is exact for these
    assert np.array_equal(round_to(exact32, "bfloat16"), bf16_to_float(float_to_bits(exact32, "bfloat16")))
    assert round_to([1.0 + 2.0 ** -8], "bfloat16")[0] == 1.0  # a tie goes to even
    assert round_to([1.0 + 3 * 2.0 ** -8], "bfloat16")[0] == 1.0 + 2.0 ** -6


def test_zero_point_contraction_widens_the_bound_only_where_it_matters():
    from dataset_spec.ops.mixed_input_gemm import contraction_spread
    problem = mixed_problem("int4", "bfloat16", "scale_zero")
    prepared = prepare_problem(problem, "mixed", 1, "numpy")
    spread = contraction_spread(prepared.trials[0].values, problem)["D"]
    assert spread.shape == (64, 48) and spread.max() > 0
    scale_only = mixed_problem("int4", "bfloat16", "scale")
    assert contraction_spread(prepare_problem(scale_only, "m", 1, "numpy").trials[0].values, scale_only)["D"] == 0.0


def test_group_size_must_divide_k():
    problem = mixed_problem(k=256, group=128)
    problem.params["group_size"] = 96
    with pytest.raises(SpecError, match="multiple of params.group_size"):
        get_op("mixed_input_gemm").reference(
            {b.name: np.zeros(b.shape) for b in problem.buffers}, problem)
