"""grouped_blockwise_scaled_gemm on CPU: G blockwise-scaled FP8 GEMMs in concatenated
buffers with per-problem scale tables. A kernel emulated as CUTLASS's blockwise mainloop
computes, problem by problem, passes every trial kind; the exact reference rounded to the
output passes; a 1% error planted in one problem (the others exact) is caught; each problem
is bounded with its own K; the tables hold shapes, leading dimensions and scale addresses."""
import numpy as np
import pytest

from dataset_spec.device_tables import table_storage
from dataset_spec.model import Problem, SpecError
from dataset_spec.ops import get_op
from dataset_spec.ops.grouped_blockwise_gemm import TABLE_NAMES, make_grouped_blockwise_problem, members
from test_blockwise_gemm import emulate as emulate_one
from verify.trials.inputs import make_trial_inputs
from verify.runner import prepare_problem
from helpers import judge as shared_judge

LAYOUTS = {"a": "row", "b": "col", "c": "col", "sfa": "col", "sfb": "col"}  # CUTLASS's tnn kernels
# uneven experts: a partial M tile, a partial K block (K = 272 = 2 x 128 + 16), K of one block
PROBLEMS = [(64, 128, 384), (16, 256, 272), (136, 128, 128)]
KINDS = ["normal", "uniform", "wide", "edge", "stress"]


def grouped(out="bfloat16", granularity=(1, 128, 128), beta=0.0, problems=PROBLEMS):
    gm, gn, gk = granularity
    dtypes = {"A": "float8_e4m3", "B": "float8_e4m3", "C": "bfloat16", "D": out}
    return make_grouped_blockwise_problem(f"gbw/{out}/{gm}x{gn}x{gk}", problems, dtypes, (gm, gk), (gn, gk),
                                          LAYOUTS, 1.0, beta)


def emulate(values: dict, problem: Problem) -> np.ndarray:
    """A correct kernel: each problem as the blockwise mainloop computes it."""
    out = np.zeros(problem.buffer("D").shape)
    for m in members(problem, values):
        out[m.start:m.stop] = emulate_one(m.inputs, m.problem).reshape(-1)
    return out


def judge(problem, kernel):
    return shared_judge(problem, kernel, reference="numpy")


@pytest.mark.parametrize("out,granularity", [("bfloat16", (1, 128, 128)), ("float32", (128, 128, 128)),
                                             ("float16", (1, 128, 128))])
def test_emulated_kernel_passes_every_trial_kind(out, granularity):
    problem = grouped(out, granularity)
    verdict, prepared = judge(problem, lambda values, ref: emulate(values, problem))
    assert [t.kind for t in prepared.trials] == KINDS
    assert verdict.status == "passed", verdict.message


def test_epilogue_with_c_passes():
    problem = grouped(beta=0.5)
    assert "C" in [b.name for b in problem.buffers]
    verdict, _ = judge(problem, lambda values, ref: emulate(values, problem))
    assert verdict.status == "passed", verdict.message


@pytest.mark.parametrize("which", range(len(PROBLEMS)))
def test_one_percent_error_in_one_problem_is_caught_and_a_rounded_output_passes(which):
    problem = grouped()
    start, stop = problem.params["offsets"]["D"][which:which + 2]
    verdict, _ = judge(problem, lambda values, ref: ref)  # exact, rounded once to bfloat16
    assert verdict.status == "passed", verdict.message

    def kernel(values, ref):
        out = np.array(ref, dtype=np.float64).reshape(-1)
        out[start:stop] *= 1.01
        return out
    verdict, prepared = judge(problem, kernel)
    assert verdict.status == "wrong_result", f"a 1% error in problem {which} passed"
    assert prepared.catches_rel_err < 0.01


def test_scales_of_the_wrong_problem_are_caught():
    """A kernel that reads problem 0's scales for problem 1 (a wrong ptr_SFA entry) fails."""
    problem = grouped(problems=[(64, 128, 256), (64, 128, 256)])

    def kernel(values, ref):
        swapped = dict(values)
        sfa = np.array(values["SFA"], dtype=np.float64).reshape(-1)
        half = sfa.size // 2
        swapped["SFA"] = np.concatenate([sfa[:half], sfa[:half]])
        return emulate(swapped, problem)
    verdict, _ = judge(problem, kernel)
    assert verdict.status == "wrong_result"


def test_each_problem_is_bounded_with_its_own_k():
    problem = grouped()
    prepared = prepare_problem(problem, "g", 1, reference="numpy")
    bound, ref = prepared.specs[0].bounds[0], prepared.references[0]["D"]
    values = prepared.trials[0].values
    single = get_op("blockwise_scaled_gemm")
    for m in members(problem, values):
        mine = single.bounds(m.inputs, m.problem, {"D": ref[m.start:m.stop].reshape(m.problem.buffer("D").shape)})
        assert np.allclose(bound[m.start:m.stop], mine["D"].reshape(-1))
    assert [m.problem.params["K"] for m in members(problem, values)] == [384, 272, 128]


def test_buffers_and_tables_hold_every_problems_blocks():
    problem = grouped(granularity=(128, 128, 128), beta=0.5)
    p = problem.params
    # SFA: ceil(M/128) x ceil(K/128) per problem: 1x3, 1x3, 2x1
    assert p["offsets"]["SFA"] == [0, 3, 6, 8] and p["offsets"]["SFB"] == [0, 3, 9, 10]
    assert problem.buffer("SFA").shape == (8,) and problem.buffer("SFA").dtype == "float32"
    assert {b.name for b in problem.buffers} >= set(TABLE_NAMES)
    assert table_storage(problem.buffer("problem_sizes")).tolist() == [list(x) for x in PROBLEMS]
    assert table_storage(problem.buffer("ld_A")).tolist() == [k for _, _, k in PROBLEMS]  # row-major A
    assert table_storage(problem.buffer("ld_D")).tolist() == [m for m, _, _ in PROBLEMS]  # column-major D
    fake = {b.name: 0x7F00_0000_0000 + i * 0x1_0000_0000 for i, b in enumerate(problem.buffers)}
    assert table_storage(problem.buffer("ptr_SFB"), fake).tolist() == [fake["SFB"] + 4 * s for s in (0, 3, 9)]
    assert table_storage(problem.buffer("ptr_C"), fake)[1] == fake["C"] + 2 * 64 * 128
    first, wide = make_trial_inputs(problem, "g", 0), make_trial_inputs(problem, "g", 2)
    assert "ptr_SFA" not in first.storage
    assert np.array_equal(first.storage["problem_sizes"], wide.storage["problem_sizes"])
    again = Problem.from_json(problem.to_json())
    assert again.digest() == problem.digest()


def test_bad_problems_are_refused_in_one_line():
    with pytest.raises(SpecError, match="not 16-byte aligned"):
        grouped(problems=[(3, 128, 40), (8, 128, 128)])  # A_1 would start 120 bytes in
    with pytest.raises(SpecError, match="scale layouts must be 'col'"):
        make_grouped_blockwise_problem("x", [(128, 128, 128)], {"A": "float8_e4m3", "B": "float8_e4m3", "D": "float32"},
                                       (1, 128), (128, 128), dict(LAYOUTS, sfa="row"))
    with pytest.raises(SpecError, match="share one K granularity"):
        make_grouped_blockwise_problem("x", [(128, 128, 128)], {"A": "float8_e4m3", "B": "float8_e4m3", "D": "float32"},
                                       (1, 128), (128, 64), LAYOUTS)
