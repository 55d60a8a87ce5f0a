"""sparse_gemm on CPU: every trial gives E new valid metadata, the reference is the dense
GEMM of the expanded A, a kernel emulated in float32 passes every trial kind, and a
planted 1% error (or a kernel that ignores the metadata) fails."""
import numpy as np
import pytest

from dataset_spec.model import Buffer, Problem
from dataset_spec.ops.sparse_gemm import dense_a, expanded_a, kept_products
from dataset_spec.sparse_meta import Sm80SparseFormat, Sm90SparseFormat
from dataset_spec.trials import DERIVED, trial_spec
from verify.trials.inputs import make_trial_inputs, to_storage
from verify.judge.outcome import CheckResult, TrialRun, classify
from verify.runner import prepare_problem

M, N, K = 64, 48, 256
BITS = {"float16": 16, "bfloat16": 16, "float32": 32, "int8": 8}


def sparse_problem(dtype="float16", layout_a="row", out="float32", beta=0.0, sm90_tile_k=0) -> Problem:
    fmt = Sm90SparseFormat(BITS[dtype], sm90_tile_k) if sm90_tile_k else Sm80SparseFormat(BITS[dtype])
    a_shape = (M, K // 2) if layout_a == "row" else (K // 2, M)
    buffers = [Buffer("A", dtype, a_shape), Buffer("B", dtype, (K, N)),
               Buffer("E", fmt.meta_dtype, fmt.storage_shape(M, K))]
    if beta:
        buffers.append(Buffer("C", out, (M, N)))
    buffers.append(Buffer("D", out, (M, N), "out"))
    params = {"M": M, "N": N, "K": K, "layout_a": layout_a, "layout_b": "row", "layout_c": "row",
              "alpha": 1.0, "beta": beta, "accumulator": "float32", "math_input": "",
              "sparse": {"format": "sm80", "element_bits": BITS[dtype]}}
    if sm90_tile_k:
        params["sparse"] = {"format": "sm90", "element_bits": BITS[dtype], "min_tile_k": sm90_tile_k}
    return Problem(f"sparse_{dtype}_{layout_a}_{sm90_tile_k}", "sparse_gemm", buffers, params=params)


def emulate(values, problem):
    """A correct kernel: the kept products of A and B summed in float32 (plus beta C), one
    rounding at the store."""
    a, kept = expanded_a(values, problem)
    d = kept_products(a.astype(np.float32), kept, values["B"].astype(np.float32))
    if "C" in values:
        d = d + np.float32(problem.params["beta"]) * values["C"].astype(np.float32)
    return d


def judge(problem, kernel):
    prepared = prepare_problem(problem, "g", None)
    assert prepared.refusal == "", prepared.refusal
    runs = []
    for trial, ref in zip(prepared.trials, prepared.references):
        runs.append(TrialRun(trial.trial, {"D": to_storage(kernel(trial.values, ref["D"]), "float32")}))
    return classify(CheckResult(runs), prepared.specs, prepared.references), prepared


@pytest.mark.parametrize("sm90_tile_k,e_dtype", [(0, "<u2"), (128, "u1")])
def test_metadata_is_derived_valid_and_new_every_trial(sm90_tile_k, e_dtype):
    problem = sparse_problem(sm90_tile_k=sm90_tile_k)
    assert all(p.how == DERIVED for p in trial_spec(problem, 0).buffers if p.name == "E")
    first, second = (make_trial_inputs(problem, "g", t) for t in (0, 1))
    assert first.storage["E"].dtype == np.dtype(e_dtype)
    assert not np.array_equal(first.storage["E"], second.storage["E"])
    for trial in (first, second):
        dense = dense_a(trial.values, problem)
        groups = (dense.reshape(M, K // 4, 4) != 0).sum(axis=2)
        assert groups.max() <= 2 and np.count_nonzero(dense) == np.count_nonzero(trial.values["A"])
    again = make_trial_inputs(problem, "g", 0)
    assert np.array_equal(again.storage["E"], first.storage["E"])  # seeded: a failure reproduces


@pytest.mark.parametrize("dtype,layout_a,sm90_tile_k", [("float16", "row", 0), ("bfloat16", "col", 0),
                                                        ("float32", "row", 0), ("float16", "row", 64),
                                                        ("float32", "col", 32)])
def test_correct_kernel_passes_and_one_percent_fails(dtype, layout_a, sm90_tile_k):
    problem = sparse_problem(dtype, layout_a, sm90_tile_k=sm90_tile_k)
    verdict, prepared = judge(problem, lambda values, ref: emulate(values, problem))
    assert verdict.status == "passed", verdict.message
    assert 0 < verdict.max_err_ratio <= 1
    verdict, _ = judge(problem, lambda values, ref: ref * 1.01)
    assert verdict.status == "wrong_result", "a 1% error passed"

    def one_element_off(values, ref):
        out = emulate(values, problem).astype(np.float64)
        out[3, 5] = ref[3, 5] * 1.01 + (0.01 if ref[3, 5] == 0 else 0.0)
        return out
    verdict, _ = judge(problem, one_element_off)
    assert verdict.status == "wrong_result", "a 1% error in one element passed"


def test_kernel_that_misreads_the_metadata_fails():
    problem = sparse_problem()

    def dense_without_metadata(values, ref):  # kept values placed at the first two slots
        kept = values["A"].reshape(M, K // 4, 2)
        dense = np.concatenate([kept, np.zeros_like(kept)], axis=2).reshape(M, K)
        return dense.astype(np.float32) @ values["B"].astype(np.float32)
    verdict, _ = judge(problem, dense_without_metadata)
    assert verdict.status == "wrong_result"


def test_integer_operands_and_beta():
    problem = sparse_problem("int8", out="int32")
    trial = make_trial_inputs(problem, "g", 0)
    assert trial.storage["E"].dtype == np.dtype("<u4")
    assert np.all(trial.values["A"] == np.round(trial.values["A"]))
    verdict, _ = judge(sparse_problem(beta=0.5), lambda values, ref: emulate(values, sparse_problem(beta=0.5)))
    assert verdict.status == "passed", verdict.message


def test_an_infinity_of_b_meets_only_the_kept_values():
    """0 * inf is NaN in a dense product, but the hardware never multiplies a dropped zero:
    a column of D whose B holds an infinity is infinite, not NaN, where A drops that K."""
    from dataset_spec.ops.sparse_gemm import ref_sparse_gemm
    problem = sparse_problem()
    trial = make_trial_inputs(problem, "g", 0)
    values = dict(trial.values)
    values["B"] = values["B"].copy()
    values["B"][7, 3] = np.inf
    dense = dense_a(values, problem)
    ref = ref_sparse_gemm(values, problem)["D"]
    dropped = dense[:, 7] == 0
    assert dropped.any() and (~dropped).any()
    assert np.all(np.isfinite(ref[dropped, 3]))
    assert np.all(np.isinf(ref[~dropped, 3]))
