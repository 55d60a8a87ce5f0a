"""dataset_spec.trials owns a problem's trials (kinds, float domains, integer ranges);
verify/trials/inputs.py draws exactly what the plan names."""
from __future__ import annotations

from dataset_spec.model import DEFAULT_TRIAL_KINDS, TRIAL_KINDS, Buffer, Problem
from dataset_spec.ops import get_op
from dataset_spec.trials import DRAW, INTEGERS, STRESS, trial_plan
from verify.trials.inputs import make_trial_inputs


def gemm(dtype: str, trial_kinds=None) -> Problem:
    kwargs = {"trial_kinds": trial_kinds} if trial_kinds else {}
    return Problem("g", "gemm", [Buffer("A", dtype, (16, 32)), Buffer("B", dtype, (32, 8)),
                                 Buffer("D", "int32" if dtype == "int8" else dtype, (16, 8), "out")],
                   {"m": 16, "n": 8, "k": 32}, **kwargs)


def test_one_constant_of_trial_kinds_and_the_default_selection():
    assert set(DEFAULT_TRIAL_KINDS) < set(TRIAL_KINDS) and "stress" in DEFAULT_TRIAL_KINDS
    plan = trial_plan(gemm("float16"))
    assert [t.kind for t in plan] == list(DEFAULT_TRIAL_KINDS)


def test_the_plan_names_each_buffer_s_domain_and_inputs_draws_over_it():
    problem = gemm("float16")
    op = get_op("gemm")
    for spec in trial_plan(problem):
        drawn = make_trial_inputs(problem, "group", spec.trial)
        assert drawn.kind == spec.kind
        for buffer in spec.buffers:
            if spec.kind in ("wide", "edge", "stress"):
                assert buffer.domain == op.domain(problem, buffer.name)
                assert drawn.ranges[buffer.name] == list(buffer.domain)
                assert buffer.how == (STRESS if spec.kind == "stress" else DRAW)
            else:
                assert (buffer.how, buffer.domain) == (DRAW, None) and buffer.name not in drawn.ranges


def test_integer_operands_take_the_op_s_range_in_every_kind():
    problem = gemm("int8")
    for spec in trial_plan(problem):
        drawn = make_trial_inputs(problem, "group", spec.trial)
        for buffer in spec.buffers:
            assert buffer.how == INTEGERS and buffer.integer_range == (-128, 128)
            assert drawn.ranges[buffer.name] == [-128, 127]
            assert -128 <= drawn.values[buffer.name].min() and drawn.values[buffer.name].max() <= 127


def test_unknown_kinds_are_skipped_as_before():
    problem = gemm("float32", trial_kinds=["wide", "sideways", "small"])
    assert [t.kind for t in trial_plan(problem)] == ["wide", "small"]
    assert [t.kind for t in trial_plan(problem, trials=3)] == ["wide", "small", "wide"]
