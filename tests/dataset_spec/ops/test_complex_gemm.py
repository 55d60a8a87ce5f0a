"""complex_gemm on CPU: interleaved complex buffers, the complex128 reference with the
operands' conjugate transforms, and the per-part bound: kernels emulated in complex64
(standard and Gaussian 3-multiplication forms) pass every trial kind, while a planted 1%
error, a forgotten conjugate and a swapped real/imaginary part fail."""
import numpy as np
import pytest

from dataset_spec.model import Buffer, Problem
from dataset_spec.ops.complex_gemm import to_complex, to_parts
from verify.trials.inputs import to_storage
from verify.judge.outcome import CheckResult, TrialRun, classify
from verify.runner import prepare_problem

M, N, K = 32, 24, 96


def complex_problem(dtype="float32", transform_a="none", transform_b="conj", gaussian=False, beta=0.0):
    buffers = [Buffer("A", dtype, (M, K, 2)), Buffer("B", dtype, (N, K, 2))]
    if beta:
        buffers.append(Buffer("C", dtype, (M, N, 2)))
    buffers.append(Buffer("D", dtype, (M, N, 2), "out"))
    params = {"M": M, "N": N, "K": K, "layout_a": "row", "layout_b": "col", "layout_c": "row",
              "alpha": 1.0, "beta": beta, "accumulator": dtype, "math_input": "",
              "complex": {"transform_a": transform_a, "transform_b": transform_b, "gaussian": gaussian}}
    return Problem(f"complex_{dtype}_{transform_a}_{transform_b}_{gaussian}", "complex_gemm", buffers, params=params)


def operands(values, problem, forget_conj=False):
    cdtype = np.complex64 if problem.buffer("D").dtype == "float32" else np.complex128
    a = to_complex(values["A"], problem, "A").astype(cdtype)
    b = to_complex(values["B"], problem, "B").astype(cdtype).T
    c = problem.params["complex"]
    if c["transform_a"] == "conj" and not forget_conj:
        a = np.conj(a)
    if c["transform_b"] == "conj" and not forget_conj:
        b = np.conj(b)
    return a, b


def standard(values, ref, problem, forget_conj=False):
    a, b = operands(values, problem, forget_conj)
    d = a @ b
    if "C" in values:
        d = d + problem.params["beta"] * to_complex(values["C"], problem, "C").astype(d.dtype)
    return to_parts(d)


def gaussian(values, ref, problem):
    """CUTLASS's three real accumulations (gemm/warp/mma_gaussian_complex_tensor_op.h), in
    the part's precision: P1 = (ar + ai) br, P2 = -ar (br - bi), P3 = ai (br + bi);
    re = P1 - P3, im = P1 + P2."""
    a, b = operands(values, problem)
    real = a.real.dtype.type
    p1 = (a.real + a.imag).astype(real) @ b.real
    p2 = (-a.real) @ (b.real - b.imag).astype(real)
    p3 = a.imag @ (b.real + b.imag).astype(real)
    return np.stack([p1 - p3, p1 + p2], axis=-1)


def judge(problem, kernel):
    prepared = prepare_problem(problem, "g", None)
    assert prepared.refusal == "", prepared.refusal
    dtype = problem.buffer("D").dtype
    runs = [TrialRun(t.trial, {"D": to_storage(kernel(t.values, ref["D"], problem), dtype)})
            for t, ref in zip(prepared.trials, prepared.references)]
    return classify(CheckResult(runs), prepared.specs, prepared.references), prepared


CASES = [("float32", "none", "none", False), ("float32", "none", "conj", False), ("float32", "conj", "conj", False),
         ("float64", "conj", "none", False), ("float64", "none", "conj", True), ("float32", "none", "none", True)]


@pytest.mark.parametrize("dtype,ta,tb,gauss", CASES)
def test_correct_kernel_passes_and_a_one_percent_error_fails(dtype, ta, tb, gauss):
    problem = complex_problem(dtype, ta, tb, gauss)
    kernel = gaussian if gauss else standard
    verdict, _ = judge(problem, kernel)
    assert verdict.status == "passed", verdict.message
    assert verdict.max_err_ratio <= 1 and (verdict.max_err_ratio > 0 or dtype == "float64")
    verdict, _ = judge(problem, lambda values, ref, p: ref * 1.01)
    assert verdict.status == "wrong_result", "a 1% error passed"

    def one_element_off(values, ref, p):  # 1% of |d| in the complex plane, in one element
        out = kernel(values, ref, p).astype(np.float64)
        magnitude = np.hypot(ref[3, 5, 0], ref[3, 5, 1])
        out[3, 5, 1] = ref[3, 5, 1] + 0.01 * magnitude
        return out
    verdict, _ = judge(problem, one_element_off)
    assert verdict.status == "wrong_result", "a 1% complex error in one element passed"


def test_forgotten_conjugate_and_swapped_parts_fail():
    problem = complex_problem("float32", "none", "conj")
    verdict, _ = judge(problem, lambda values, ref, p: standard(values, ref, p, forget_conj=True))
    assert verdict.status == "wrong_result"
    verdict, _ = judge(problem, lambda values, ref, p: standard(values, ref, p)[..., ::-1])
    assert verdict.status == "wrong_result"


def test_beta_reads_c_as_complex():
    problem = complex_problem(beta=0.5)
    verdict, _ = judge(problem, standard)
    assert verdict.status == "passed", verdict.message
