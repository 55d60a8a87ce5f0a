"""Which references the verifier refuses as trivial: an output no trial can tell from a
constant is refused; one trial that cannot (a stress row of one value, a wide trial whose
outputs all sit inside their bounds) is carried by the others; an output that is the same
non-zero array whatever the inputs (Welford's count) is judged beside informative outputs
but never carries a group alone; and a flattened 1-D stress buffer draws every pattern."""
import numpy as np

from dataset_spec import stress
from dataset_spec.model import Buffer, Problem
from verify.runner import input_independent, prepare_problem

N = 4096


def custom(source: str, outputs=("out",)) -> Problem:
    buffers = [Buffer("x", "float32", (N,))] + [Buffer(name, "float32", (N,), "out") for name in outputs]
    return Problem("p", "custom", buffers, params={"reference": "user_ref:f", "reference_source": source})


def test_an_output_constant_in_some_trials_only_is_not_refused():
    # a constant wherever the trial draws large values (wide, edge, stress): those trials
    # cannot tell a constant writer, the normal and uniform trials can
    source = ("import numpy as np\n"
              "def f(inputs, problem):\n"
              "    x = inputs['x']\n"
              "    return {'out': x * 2 if float(abs(x).max()) < 50 else x * 0 + 1}\n")
    prepared = prepare_problem(custom(source), "g", salt="")
    assert prepared.refusal == "", prepared.refusal


def test_an_output_constant_in_every_trial_is_refused():
    source = "def f(inputs, problem):\n    return {'out': inputs['x'] * 0 + 3.0}\n"
    prepared = prepare_problem(custom(source), "g", salt="")
    assert prepared.refusal_status == "trivial_reference"
    assert "every other trial" in prepared.refusal and "out" in prepared.refusal


def test_a_count_beside_informative_outputs_is_judged_not_refused():
    source = "def f(inputs, problem):\n    return {'mean': inputs['x'] * 2, 'count': inputs['x'] * 0 + 64.0}\n"
    prepared = prepare_problem(custom(source, ("mean", "count")), "g", salt="")
    assert prepared.refusal == "", prepared.refusal
    assert "count: the same non-zero value in every trial" in prepared.bound_note


def test_a_flag_that_no_draw_sets_is_refused_even_beside_informative_outputs():
    # isinf(x).any() on finite draws: 0 in every trial; a kernel that never computes it must
    # not pass on the strength of the other output
    source = "def f(inputs, problem):\n    return {'y': inputs['x'] * 2, 'flag': inputs['x'] * 0}\n"
    prepared = prepare_problem(custom(source, ("y", "flag")), "g", salt="")
    assert prepared.refusal_status == "trivial_reference" and "flag" in prepared.refusal


def test_input_independent_needs_equal_finite_non_zero_arrays():
    ones = {"c": np.ones(4)}
    assert input_independent("c", [ones, {"c": np.ones(4)}])
    assert not input_independent("c", [ones, {"c": np.full(4, 2.0)}])
    assert not input_independent("c", [{"c": np.zeros(4)}, {"c": np.zeros(4)}])
    assert not input_independent("c", [{"c": np.full(4, np.inf)}] * 2)
    assert not input_independent("c", [ones])


def test_a_one_row_stress_buffer_draws_every_pattern():
    context = stress.StressContext(np.random.default_rng(0), 0.0, 1.0, 1e-3, 1024.0, "float16", 1e-5)
    values = stress.row_stress(stress.GENERIC, (N,), context, segments=True)
    assert values.shape == (N,)
    assert len(np.unique(values)) > N // 4  # not one value: the first pattern alone is a constant
    segments = np.array_split(values, len(stress.GENERIC))
    assert len(np.unique(segments[0])) == 1  # the constant pattern keeps its segment
    several_rows = stress.row_stress(stress.GENERIC, (len(stress.GENERIC), 64), context, segments=True)
    assert len(np.unique(stress.row_stress(stress.GENERIC, (N,), context))) == 1  # reduced rows stay whole
    assert len(np.unique(several_rows[0])) == 1  # with a row per pattern, rows as before


def test_the_device_test_gives_the_host_tests_answers():
    import pytest
    torch = pytest.importorskip("torch")
    from verify.judge.compare import trivial_reason
    from verify.trials.device_prepare import trivial_reason_tensor
    cases = [np.zeros(8), np.full(8, 3.0), np.linspace(-1, 1, 8), np.array([0.0, -np.inf, 0.0, 0.0]),
             np.array([np.nan, np.nan])]
    for ref in cases:
        host = trivial_reason(ref, 1e-5)
        device = trivial_reason_tensor(torch.from_numpy(ref), torch.tensor(1e-5, dtype=torch.float64))
        assert bool(host) == bool(device), (ref, host, device)


def test_kernels_that_skip_the_work_still_fail_where_a_trivial_trial_is_allowed():
    """How a kernel could earn a pass without the work once one trivial trial no longer
    refuses the group: a constant writer (the constant the large-value trials expect), or one
    that writes the input-independent count right and skips the informative output."""
    from helpers import judge_outputs
    source = ("def f(inputs, problem):\n"
              "    x = inputs['x']\n"
              "    return {'out': x * 2 if float(abs(x).max()) < 50 else x * 0 + 1}\n")
    constant, _ = judge_outputs(custom(source), lambda v: {"out": np.ones(N)})
    assert constant.status == "wrong_result", constant.message
    honest, _ = judge_outputs(custom(source), lambda v: {"out": v["x"] * 2 if abs(v["x"]).max() < 50 else v["x"] * 0 + 1})
    assert honest.status == "passed", honest.message
    counted = "def f(inputs, problem):\n    return {'mean': inputs['x'] * 2, 'count': inputs['x'] * 0 + 64.0}\n"
    only_count, _ = judge_outputs(custom(counted, ("mean", "count")), lambda v: {"mean": np.zeros(N), "count": np.full(N, 64.0)})
    assert only_count.status == "wrong_result", only_count.message
