"""grouped_gemm on CPU: concatenated operands, device tables, a per-problem GEMM bound.

A float32-emulated correct kernel passes every trial kind; a 1% error planted in one
problem's output (the others exact) is caught; tables are exact, the same every trial, and
the addresses table follows the allocation map it is given."""
import numpy as np
import pytest

from dataset_spec.device_tables import table_storage
from dataset_spec.model import Problem, SpecError
from dataset_spec.ops import get_op
from dataset_spec.ops.grouped_gemm import make_grouped_problem, members
from verify.trials.inputs import make_trial_inputs, to_storage
from verify.judge.outcome import CheckResult, TrialRun, classify
from verify.runner import prepare_problem

PROBLEMS = [(48, 64, 96), (16, 32, 320), (80, 16, 40)]


def grouped(dtype="float16", beta=0.0, layouts=None, problems=PROBLEMS):
    layouts = layouts or {"a": "row", "b": "col", "c": "row"}
    dtypes = {"A": dtype, "B": dtype, "C": dtype, "D": dtype}
    return make_grouped_problem("grouped_test", problems, dtypes, layouts, 1.0, beta,
                                extra_params={"accumulator": "float32"})


def emulate(values: dict, problem: Problem) -> np.ndarray:
    """A correct kernel: each problem in float32 on the stored inputs."""
    out = np.zeros(problem.buffer("D").shape)
    for m in members(problem, values):
        a = m.inputs["A"].reshape(m.problem.buffer("A").shape).astype(np.float32)
        b = m.inputs["B"].reshape(m.problem.buffer("B").shape).astype(np.float32)
        p = m.problem.params
        a = a if p["layout_a"] == "row" else a.T
        b = b if p["layout_b"] == "row" else b.T
        d = a @ b
        if "C" in m.inputs:
            c = m.inputs["C"].reshape(m.problem.buffer("C").shape).astype(np.float32)
            d = d + np.float32(p["beta"]) * (c if p["layout_c"] == "row" else c.T)
        out[m.start:m.stop] = (d if p["layout_c"] == "row" else d.T).reshape(-1)
    return out


def judge(problem: Problem, kernel):
    prepared = prepare_problem(problem, "g", None)
    assert prepared.refusal == "", prepared.refusal
    runs = []
    for trial, ref in zip(prepared.trials, prepared.references):
        out = kernel(trial.values, ref["D"])
        runs.append(TrialRun(trial.trial, {"D": to_storage(out, "float16")}))
    return classify(CheckResult(runs), prepared.specs, prepared.references), prepared


@pytest.mark.parametrize("beta", [0.0, 0.5])
def test_correct_kernel_passes_every_trial_kind(beta):
    problem = grouped(beta=beta)
    verdict, prepared = judge(problem, lambda values, ref: emulate(values, problem))
    assert [t.kind for t in prepared.trials] == ["normal", "uniform", "wide", "edge", "stress"]
    assert verdict.status == "passed", verdict.message


@pytest.mark.parametrize("which", range(len(PROBLEMS)))
def test_one_percent_error_in_one_problem_is_caught(which):
    problem = grouped()
    start, stop = problem.params["offsets"]["D"][which:which + 2]

    def kernel(values, ref):
        out = emulate(values, problem)
        out[start:stop] *= 1.01
        return out
    verdict, prepared = judge(problem, kernel)
    assert verdict.status == "wrong_result", f"a 1% error in problem {which} passed"
    assert prepared.catches_rel_err < 0.01


def test_each_problem_is_bounded_with_its_own_k():
    """The bound of a K=40 problem is far tighter than the group's largest K would give."""
    problem = grouped()
    prepared = prepare_problem(problem, "g", 1)
    bound, ref = prepared.specs[0].bounds[0], prepared.references[0]["D"]
    values = prepared.trials[0].values
    gemm_op = get_op("gemm")
    for m in members(problem, values):
        mine = gemm_op.bounds(m.inputs, m.problem, {"D": ref[m.start:m.stop].reshape(m.problem.buffer("D").shape)})
        assert np.allclose(bound[m.start:m.stop], mine["D"].reshape(-1))
    small = members(problem, values)[2]
    assert small.problem.params["K"] == 40


def test_tables_hold_shapes_leading_dimensions_and_addresses():
    problem = grouped(beta=0.5, layouts={"a": "col", "b": "row", "c": "row"})
    assert table_storage(problem.buffer("problem_sizes")).tolist() == [list(p) for p in PROBLEMS]
    assert table_storage(problem.buffer("ld_A")).tolist() == [m for m, _, _ in PROBLEMS]  # col-major A: ld = M
    assert table_storage(problem.buffer("ld_B")).tolist() == [n for _, n, _ in PROBLEMS]
    assert table_storage(problem.buffer("ld_D")).tolist() == [n for _, n, _ in PROBLEMS]
    fake = {b.name: 0x7F00_0000_0000 + i * 0x1_0000_0000 for i, b in enumerate(problem.buffers)}
    ptr_b = table_storage(problem.buffer("ptr_B"), fake)
    assert ptr_b.dtype == np.uint64
    expected = [fake["B"] + 2 * start for start in problem.params["offsets"]["B"][:-1]]
    assert ptr_b.tolist() == expected
    assert table_storage(problem.buffer("ptr_C"), fake)[0] == fake["C"]
    with pytest.raises(SpecError, match="allocation map"):
        table_storage(problem.buffer("ptr_A"))
    # beta = 0: no C buffer, and ptr_C names D's problems (kernels read the array, not C)
    plain = grouped()
    assert "C" not in [b.name for b in plain.buffers]
    assert table_storage(plain.buffer("ptr_C"), fake).tolist() == table_storage(plain.buffer("ptr_D"), fake).tolist()


def test_tables_are_the_same_every_trial_and_addresses_are_not_drawn():
    problem = grouped()
    first, wide = make_trial_inputs(problem, "g", 0), make_trial_inputs(problem, "g", 2)
    assert wide.kind == "wide"
    assert "ptr_A" not in first.storage
    assert np.array_equal(first.storage["problem_sizes"], wide.storage["problem_sizes"])
    assert first.storage["ld_B"].dtype == np.int64


def test_problem_round_trips_and_bad_tables_are_refused():
    problem = grouped(beta=0.5)
    again = Problem.from_json(problem.to_json())
    assert again.digest() == problem.digest()
    assert again.buffer("ptr_A").init.params["entries"][1] == ["A", 2 * 48 * 96]
    data = problem.to_json().replace('["A", 0]', '["nope", 0]')
    with pytest.raises(SpecError, match="points into buffer 'nope'"):
        Problem.from_json(data)
    with pytest.raises(SpecError, match="not 16-byte aligned"):
        grouped(problems=[(3, 8, 5), (8, 8, 8)])  # A_1 would start 30 bytes in


class FakeBuffer:
    """Stands in for a fenced device buffer: two placements at different addresses."""
    def __init__(self, base: int):
        self.views = {"after": base + 0x100, "before": base}
        self.uploaded = None

    def kernel_address(self, placement):
        return self.views[placement]

    def place(self, placement):
        pass

    def arm(self, fill):
        pass

    def upload(self, host):
        self.uploaded = np.array(host, copy=True)

    def fill_word(self, *word):
        self.uploaded = "poison"


def test_loaded_row_writes_address_tables_for_each_placement():
    """prepare uploads each addresses table with the placement's addresses, values tables
    from the row when the inputs lack them, and keeps what it wrote for the input check."""
    from verify.member.row import LoadedRow
    problem = grouped()
    specs = {b.name: b for b in problem.buffers}
    buffers = {name: FakeBuffer(0x7F00_0000_0000 + i * 0x1000_0000) for i, name in enumerate(specs)}
    row = LoadedRow("k", None, buffers, specs, [])
    inputs = make_trial_inputs(problem, "g", 0).storage
    for placement in ("after", "before"):
        row.prepare(inputs, 0, 0, np.zeros(64, np.uint8), placement)
        base = buffers["B"].views[placement]
        expected = [base + 2 * s for s in problem.params["offsets"]["B"][:-1]]
        assert buffers["ptr_B"].uploaded.tolist() == expected
        assert row.tables["ptr_B"].tolist() == expected
    assert buffers["D"].uploaded == "poison"
    without = {k: v for k, v in inputs.items() if k != "problem_sizes"}
    row.prepare(without, 0, 0, np.zeros(64, np.uint8))
    assert buffers["problem_sizes"].uploaded.tolist() == [list(p) for p in PROBLEMS]
