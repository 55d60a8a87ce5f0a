"""A custom op's derived inputs (``params.derived_inputs``): an input made in every trial
from the buffers drawn before it by a function of the reference module (a sorted copy of
x, a norm's rstd for its backward), checked when the problem is read and drawn by the
verifier's trial inputs in every kind."""
import numpy as np
import pytest

from builders.manifest import ManifestError, read_problem
from dataset_spec.model import TRIAL_KINDS
from dataset_spec.trials import DERIVED, trial_spec

MODULE = '''
import numpy as np

def descending(inputs, problem):
    return -np.sort(-inputs["x"], axis=-1)

def copy_of_y(inputs, problem):
    return inputs["y"]

def ref(inputs, problem):
    return {"out": inputs["x"] + inputs["x_sorted"]}
'''


def _problem(tmp_path, derived, order=("x", "x_sorted", "out")):
    (tmp_path / "derive_ref.py").write_text(MODULE)
    buffers = {"x": {"name": "x", "dtype": "float32", "shape": [8, 64]},
               "x_sorted": {"name": "x_sorted", "dtype": "float32", "shape": [8, 64]},
               "out": {"name": "out", "dtype": "float32", "shape": [8, 64], "role": "out"}}
    data = {"problem": {"problem_id": "derived", "op": "custom",
                        "params": {"reference": "derive_ref:ref", "derived_inputs": derived},
                        "buffers": [buffers[name] for name in order]}}
    return read_problem(data, tmp_path)


def test_a_derived_input_is_made_from_the_drawn_ones_in_every_trial_kind(tmp_path):
    from verify.trials.inputs import make_trial_inputs
    problem = _problem(tmp_path, {"x_sorted": "descending"})
    problem.trial_kinds = list(TRIAL_KINDS)
    for trial, kind in enumerate(TRIAL_KINDS):
        plans = {p.name: p.how for p in trial_spec(problem, trial).buffers}
        assert plans["x_sorted"] == DERIVED and plans["x"] != DERIVED, kind
        values = make_trial_inputs(problem, "g", trial).values
        x, made = values["x"], values["x_sorted"]
        assert np.array_equal(made, -np.sort(-x, axis=-1)), kind
        assert not np.array_equal(made, x)


@pytest.mark.parametrize("derived, order, message", [
    ({"x_sorted": "ascending"}, None, "derived_inputs.x_sorted: module 'derive_ref' has no function 'ascending'"),
    ({"y": "descending"}, None, "derived_inputs.y: no buffer named 'y'; known: x, x_sorted, out"),
    ({"out": "descending"}, None, "derived_inputs.out: buffer out has role out"),
    ({"x": "descending"}, None, "buffer x is declared first; declare it after the buffers it is made from"),
])
def test_a_bad_derived_input_is_one_line_naming_the_field(tmp_path, derived, order, message):
    with pytest.raises(ManifestError) as caught:
        _problem(tmp_path, derived, order or ("x", "x_sorted", "out"))
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_derived_input_reading_a_later_buffer_names_the_fix(tmp_path):
    from verify.trials.inputs import make_trial_inputs
    problem = _problem(tmp_path, {"x_sorted": "copy_of_y"})
    with pytest.raises(Exception, match="reads buffer 'y', which is not drawn before it; declare x_sorted after"):
        make_trial_inputs(problem, "g", 0)


def test_only_op_custom_takes_derived_inputs(tmp_path):
    data = {"problem": {"problem_id": "p", "op": "softmax", "params": {"derived_inputs": {"x": "f"}},
                        "buffers": [{"name": "x", "dtype": "float32", "shape": [4, 8]},
                                    {"name": "y", "dtype": "float32", "shape": [4, 8], "role": "out"}]}}
    with pytest.raises(ManifestError, match="derived_inputs: only op custom makes inputs"):
        read_problem(data, tmp_path)
