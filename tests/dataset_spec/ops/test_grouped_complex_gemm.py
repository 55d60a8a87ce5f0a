"""grouped_complex_gemm on CPU: G planar complex GEMMs sharing each operand's leading
dimension, with per-problem size and plane-pointer tables. Each problem's reference is
complex_gemm's; the exact reference rounded to the output passes, a 1% error in one
problem's imaginary plane fails, each problem is bounded with its own K, and sizes whose
problems cannot share a leading dimension are refused in one line."""
import numpy as np
import pytest

from dataset_spec.device_tables import table_storage
from dataset_spec.model import Problem, SpecError
from dataset_spec.ops import get_op
from dataset_spec.ops.grouped_complex_gemm import TABLE_NAMES, make_grouped_complex_problem, members
from verify.trials.inputs import to_storage
from verify.judge.outcome import CheckResult, TrialRun, classify
from verify.runner import prepare_problem

# kernel terms of a row-major A, column-major B, row-major C: K and N shared, M varies (MoE)
LAYOUTS = {"a": "row", "b": "col", "c": "row"}
PROBLEMS = [(48, 64, 96), (16, 64, 96), (80, 64, 96)]


def grouped(beta=0.0, problems=PROBLEMS, layouts=LAYOUTS, transforms=("conj", "none")):
    dtypes = {"A": "float16", "B": "float16", "C": "float16", "D": "float16"}
    return make_grouped_complex_problem("gcx", problems, dtypes, layouts, transforms, 1.0, beta)


def judge(problem, kernel):
    prepared = prepare_problem(problem, "g", None, reference="numpy")
    assert prepared.refusal == "", prepared.refusal
    runs = [TrialRun(t.trial, {"D": to_storage(kernel(t.values, ref["D"]), "float16")})
            for t, ref in zip(prepared.trials, prepared.references)]
    return classify(CheckResult(runs), prepared.specs, prepared.references), prepared


def test_each_problem_is_the_planar_complex_gemm_of_its_slices():
    problem = grouped(beta=0.5)
    rng = np.random.default_rng(3)
    values = {b.name: rng.standard_normal(b.shape) for b in problem.buffers if b.role == "in" and b.table is None}
    ref = get_op("grouped_complex_gemm").reference(values, problem)["D"]
    for i, m in enumerate(members(problem, values)):
        mm, n, k = PROBLEMS[i]
        a = m.inputs["A"].reshape(2, mm, k)
        b = m.inputs["B"].reshape(2, n, k)
        c = m.inputs["C"].reshape(2, mm, n)
        want = np.conj(a[0] + 1j * a[1]) @ (b[0] + 1j * b[1]).T + 0.5 * (c[0] + 1j * c[1])
        got = ref[m.start:m.stop].reshape(2, mm, n)
        np.testing.assert_allclose(got[0] + 1j * got[1], want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("which", range(len(PROBLEMS)))
def test_rounded_output_passes_and_one_percent_in_one_problem_fails(which):
    problem = grouped()
    verdict, _ = judge(problem, lambda values, ref: ref)
    assert verdict.status == "passed", verdict.message
    start, stop = problem.params["offsets"]["D"][which:which + 2]

    def kernel(values, ref):
        out = np.array(ref, dtype=np.float64).reshape(-1)
        out[(start + stop) // 2:stop] *= 1.01  # the imaginary plane of one problem
        return out
    verdict, prepared = judge(problem, kernel)
    assert verdict.status == "wrong_result", f"a 1% error in problem {which} passed"
    assert prepared.catches_rel_err < 0.01


def test_each_problem_is_bounded_with_its_own_k():
    problem = grouped(problems=[(32, 64, 512), (32, 64, 32)], layouts={"a": "col", "b": "row", "c": "row"})
    prepared = prepare_problem(problem, "g", 1, reference="numpy")
    bound, ref = prepared.specs[0].bounds[0], prepared.references[0]["D"]
    single = get_op("complex_gemm")
    for m in members(problem, prepared.trials[0].values):
        mine = single.bounds(m.inputs, m.problem, {"D": ref[m.start:m.stop].reshape(m.problem.buffer("D").shape)})
        assert np.allclose(bound[m.start:m.stop], mine["D"].reshape(-1))


def test_tables_hold_sizes_and_each_plane_address():
    problem = grouped(beta=0.5)
    assert {b.name for b in problem.buffers} >= set(TABLE_NAMES)
    assert table_storage(problem.buffer("sizes_M")).tolist() == [48, 16, 80]
    assert table_storage(problem.buffer("sizes_K")).tolist() == [96, 96, 96]
    assert problem.params["ld"] == {"A": 96, "B": 96, "C": 64, "D": 64}
    fake = {b.name: 0x7F00_0000_0000 + i * 0x1_0000_0000 for i, b in enumerate(problem.buffers)}
    a_real = table_storage(problem.buffer("ptr_A_real"), fake).tolist()
    a_imag = table_storage(problem.buffer("ptr_A_imag"), fake).tolist()
    assert a_real == [fake["A"] + 2 * s for s in (0, 2 * 48 * 96, 2 * 64 * 96)]
    assert [i - r for r, i in zip(a_real, a_imag)] == [2 * m * 96 for m, _, _ in PROBLEMS]
    plain = grouped()
    assert table_storage(plain.buffer("ptr_C_imag"), fake).tolist() == table_storage(plain.buffer("ptr_D_imag"),
                                                                                      fake).tolist()
    assert Problem.from_json(problem.to_json()).digest() == problem.digest()


def test_problems_that_cannot_share_a_leading_dimension_are_refused():
    with pytest.raises(SpecError, match="share A's contiguous extent K"):
        grouped(problems=[(48, 64, 96), (48, 64, 64)])
    with pytest.raises(SpecError, match="share A's contiguous extent M"):
        grouped(problems=[(48, 64, 96), (16, 64, 96)], layouts={"a": "col", "b": "col", "c": "row"})
