"""Reference backends: numpy always; torch on the GPU only for array-API ops, and only
when asked for or worth it."""
import numpy as np
import pytest

from dataset_spec.model import Buffer, Problem
from dataset_spec.problems import get_op
from verify.trials.reference import choose_backend, reference_outputs


def gemm(m, n, k):
    return Problem("g", "gemm", [Buffer("A", "float16", [m, k]), Buffer("B", "float16", [n, k]),
                                 Buffer("D", "float16", [m, n], "out")],
                   params={"layout_a": "row", "layout_b": "col", "K": k})


def test_small_or_non_array_api_problems_stay_on_numpy():
    assert choose_backend("gemm", gemm(16, 16, 16), "auto") == "numpy"
    row_sum = Problem("r", "row_sum", [Buffer("x", "float32", [4, 8]), Buffer("out", "float32", [4], "out")])
    assert choose_backend("row_sum", row_sum, "torch") == "numpy"
    with pytest.raises(ValueError, match="must be one of"):
        choose_backend("gemm", gemm(16, 16, 16), "cupy")


def test_numpy_reference_matches_matmul():
    problem = gemm(8, 6, 5)
    rng = np.random.default_rng(0)
    a, b_t = rng.normal(size=(8, 5)), rng.normal(size=(6, 5))
    out = reference_outputs(get_op("gemm"), {"A": a, "B": b_t}, problem, "numpy")["D"]
    np.testing.assert_allclose(out, a @ b_t.T)


@pytest.mark.gpu
def test_torch_reference_equals_numpy_on_gpu():
    pytest.importorskip("torch")
    problem = gemm(512, 768, 520)
    rng = np.random.default_rng(1)
    values = {"A": rng.normal(size=(512, 520)), "B": rng.normal(size=(768, 520))}
    assert choose_backend("gemm", problem, "auto") == "torch"
    on_gpu = reference_outputs(get_op("gemm"), values, problem, "torch")["D"]
    on_cpu = reference_outputs(get_op("gemm"), values, problem, "numpy")["D"]
    np.testing.assert_allclose(on_gpu, on_cpu, rtol=1e-12, atol=1e-12)
