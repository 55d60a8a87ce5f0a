"""A kernel whose graph tests for infinities or NaN (T5's float16 overflow guard,
``isinf(x).any()``) gets stress rows holding them, so its flag output is checked; other
kernels keep finite stress where an output cannot hold NaN."""
import numpy as np

from builders.inductor.builder import with_graph_params
from dataset_spec.model import Buffer, Problem
from verify.runner import prepare_problem
from verify.trials.inputs import make_trial_inputs

N = 4096
GUARD = ("def reference(inputs, problem):\n"
         "    import numpy as np\n"
         "    x = inputs['x'].reshape(4, -1)\n"
         "    return {'flag': np.isinf(x).any(axis=1).astype(np.float64)}\n")


def guard_problem(aten_ops) -> Problem:
    problem = Problem("t5_guard", "custom", [Buffer("x", "float16", (N,)), Buffer("flag", "uint8", (4,), "out")],
                      params={"reference": "user_ref:reference", "reference_source": GUARD,
                              "reduction_length": N // 4})
    with_graph_params(problem, {"aten_ops": aten_ops})
    return problem


def test_only_graphs_that_test_for_specials_get_them():
    assert guard_problem(["aten.add.Tensor", "aten.isinf.default", "aten.any.default"]).params["stress_specials"]
    assert "stress_specials" not in guard_problem(["aten.add.Tensor", "aten.any.default"]).params


def test_the_stress_trial_sets_the_flag_and_the_group_is_checked():
    problem = guard_problem(["aten.isinf.default", "aten.any.default"])
    stress = next(make_trial_inputs(problem, "g", t, "") for t in range(5)
                  if make_trial_inputs(problem, "g", t, "").kind == "stress")
    assert np.isinf(stress.values["x"]).any() and np.isnan(stress.values["x"]).any()
    assert prepare_problem(problem, "g", salt="").refusal == ""


def test_without_the_graph_op_the_flag_is_never_set_and_the_group_is_refused():
    problem = guard_problem(["aten.any.default"])  # an integer output: finite stress only
    assert all(np.isfinite(make_trial_inputs(problem, "g", t, "").values["x"]).all() for t in range(5))
    assert prepare_problem(problem, "g", salt="").refusal_status == "trivial_reference"


def test_a_running_variance_is_drawn_as_magnitudes_on_every_trial():
    """BatchNorm in inference reads its running variance under a square root: its trials
    (stress included) draw it non-negative, the other inputs keep both signs."""
    source = ("import numpy as np\n\ndef reference(inputs, problem):\n"
              "    return {'y': np.maximum((inputs['x'] - inputs['mean']) / np.sqrt(inputs['var'] + 1e-5), 0)}\n")
    problem = Problem("bn", "custom", [Buffer("x", "float32", (N,)), Buffer("mean", "float32", (N,)),
                                       Buffer("var", "float32", (N,)), Buffer("y", "float32", (N,), "out")],
                      params={"reference": "user_ref:reference", "reference_source": source, "reduction_length": 1})
    with_graph_params(problem, {"aten_ops": ["aten.sqrt.default"], "graph_inputs": {
        "x": "activation", "mean": "weight:model.bn1.running_mean", "var": "weight:model.bn1.running_var"}})
    assert problem.params["nonnegative_inputs"] == ["var"]
    trials = [make_trial_inputs(problem, "g", t, "") for t in range(5)]
    assert {t.kind for t in trials} >= {"normal", "wide", "edge", "stress"}
    for trial in trials:
        var = trial.values["var"]
        assert not (var < 0).any() and not np.signbit(var[~np.isnan(var)]).any(), trial.kind
        assert (trial.values["mean"] < 0).any() and (trial.values["x"] < 0).any(), trial.kind
    prepared = prepare_problem(problem, "g", salt="")
    assert prepared.refusal == ""
    # its coverage asks for no value a magnitude cannot be, and the trials draw what it asks for
    from dataset_spec.coverage import coverage_items
    var_items = {i.what for i in coverage_items(problem) if i.buffer == "var"}
    assert "zero" in var_items and not var_items & {"neg_zero", "neg_inf"}
    assert "neg_zero" in {i.what for i in coverage_items(problem) if i.buffer == "mean"}
    missed = [key for key, count in prepared.coverage().items() if key.startswith("var:") and count == 0]
    assert not missed, missed
