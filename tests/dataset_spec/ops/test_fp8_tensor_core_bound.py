"""The error bound of GEMMs summed on FP8 tensor cores weighs a subnormal FP8 operand as the
format's smallest normal (numerics.fp8_alignment_magnitudes), because the tensor core aligns
its products by exponent fields. Checked on the one output an H100 computed outside the
earlier bound (run 73), and over every trial kind with a model of the tensor core's sum
(tests/fp8_tensor_core.py) that reproduces it."""
from __future__ import annotations

import numpy as np
import pytest

from dataset_spec.model import Buffer, Problem
from dataset_spec.numerics import fp8_alignment_magnitudes
from dataset_spec.ops import get_op
from helpers import judge
from fp8_tensor_core import fp8_tensor_core_matmul

# Row 27 of A and column 118 of B of the grouped e4m3 x e5m2 -> f32 GEMM's second problem
# (40 x 128 x 64), edge trial (run 73). A[37] = 2^-9 is e4m3's smallest subnormal, and its
# product with B[37] = -24576 is aligned as if it were 2^3 times larger: the other 63
# products are truncated to 2^-5 steps, and the H100 returned -2.53125 for -2.3106...
A_ROW = [-1.0, 0.015625, -0.875, -0.171875, 0.0390625, -0.5, 0.9375, -0.046875, -0.625, 1.375, -2.0, -0.078125,
         -0.04296875, 0.5625, 0.203125, 0.6875, -0.015625, -0.9375, -1.75, -0.3125, -0.34375, 0.203125, -1.0,
         0.25, 0.0390625, 0.125, -1.125, -0.234375, -1.875, -0.046875, -0.625, -0.046875, 1.25, 0.5625, 0.0,
         1.375, 0.875, 0.001953125, 0.3125, 2.25, -0.013671875, -0.046875, 0.078125, -1.0, -0.8125, 0.015625,
         0.125, 1.125, 224.0, 0.0, -0.5, 0.8125, -0.09375, -0.046875, -0.171875, -0.875, 0.625, -0.625, 0.875,
         -0.078125, -0.0, 1.625, 0.375, 0.9375]
B_COL = [-0.21875, 2.5, 0.109375, 0.09375, -0.0625, -0.0234375, -1.25, -0.1875, -0.625, 0.01171875, -1.25,
         4.57763671875e-05, -1.25, 4.57763671875e-05, -0.625, -1.0, -0.09375, 0.15625, 0.15625, 0.109375, 0.75,
         0.75, 0.3125, 0.5, -0.0390625, 0.875, -0.5, -0.4375, -1.25, 0.4375, 1.5, 0.4375, -0.0, 0.75, -1.25,
         1.0, -0.21875, -24576.0, 0.1875, -1.52587890625e-05, -1.25, -0.875, 0.625, -0.15625, -0.75, 1.75,
         -0.1875, 0.75, 0.15625, -1.25, -4.57763671875e-05, -0.3125, -0.25, -1.25, -0.5, -0.0234375, -0.09375,
         -0.875, -4.57763671875e-05, -3.0517578125e-05, 1.0, 2.0, -0.1875, 1.25]
H100_OUTPUT = -2.53125


def fp8_gemm(m: int, n: int, k: int) -> Problem:
    """D (f32, row) = A (e4m3, row) @ B (e5m2, column), summed on FP8 tensor cores."""
    return Problem("fp8-gemm", "gemm", [
        Buffer("A", "float8_e4m3", (m, k), "in"),
        Buffer("B", "float8_e5m2", (n, k), "in"),
        Buffer("D", "float32", (m, n), "out")],
        {"M": m, "N": n, "K": k, "layout_a": "row", "layout_b": "col", "layout_c": "row", "alpha": 1.0,
         "beta": 0.0, "accumulator": "fp8_tensor_core", "math_input": ""})


def bound_of(problem: Problem, values: dict) -> tuple:
    op = get_op(problem.op)
    ref = op.reference(values, problem)["D"]
    return ref, np.asarray(op.bounds(values, problem, {"D": ref})["D"])


def test_the_model_gives_the_h100_output():
    a, b = np.array([A_ROW]), np.array([B_COL]).T
    assert fp8_tensor_core_matmul(a, b, "float8_e4m3", "float8_e5m2")[0, 0] == H100_OUTPUT


def test_bound_admits_the_h100_output_only_with_aligned_magnitudes():
    problem = fp8_gemm(1, 1, len(A_ROW))
    values = {"A": np.array(A_ROW), "B": np.array(B_COL)}
    ref, bound = bound_of(problem, values)
    err = abs(H100_OUTPUT - ref[0, 0])
    assert err <= bound.reshape(-1)[0]
    plain_scale = float(np.abs(np.array(A_ROW)) @ np.abs(np.array(B_COL)))
    terms = get_op("gemm").bound_terms(problem, "float32")
    assert err > terms.scale_coefficient * plain_scale  # the bound over |A| |B| rejects the H100


def test_alignment_magnitudes_raise_only_nonzero_subnormals():
    values = np.array([0.0, -0.0, 2.0 ** -9, -2.0 ** -7, 2.0 ** -6, -3.0, 448.0])
    assert fp8_alignment_magnitudes(values, "float8_e4m3").tolist() == [0.0, 0.0, 2.0 ** -6, 2.0 ** -6, 2.0 ** -6,
                                                                          3.0, 448.0]
    torch = pytest.importorskip("torch")
    assert fp8_alignment_magnitudes(torch.tensor(values), "float8_e4m3").tolist() == \
        fp8_alignment_magnitudes(values, "float8_e4m3").tolist()


def test_modelled_tensor_core_passes_every_trial_and_a_one_percent_error_is_caught():
    problem = fp8_gemm(48, 40, 320)  # three promotions, the last one partial

    def tensor_core(values, ref):
        a = np.asarray(values["A"]).reshape(48, 320)
        b = np.asarray(values["B"]).reshape(40, 320).T
        finite = np.isfinite(a).all() and np.isfinite(b).all()
        if not finite:  # the stress trial's infinities: the model handles finite sums only
            return ref
        return fp8_tensor_core_matmul(a, b, "float8_e4m3", "float8_e5m2")

    verdict, prepared = judge(problem, tensor_core)
    assert verdict.status == "passed", verdict.message
    assert [t.kind for t in prepared.trials] == ["normal", "uniform", "wide", "edge", "stress"]
    verdict, _ = judge(problem, lambda values, ref: tensor_core(values, ref) * 1.01)
    assert verdict.status == "wrong_result"
