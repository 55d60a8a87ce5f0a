"""The host-drawn trials of device-prepared groups (stress rows, users' derived inputs) start
on the draw threads a few groups before their preparation, each drawn once, within a bound
on the bytes held (verify/runner.py, ``_Run._draw_ahead``). A CPU torch device stands in
for the GPU the problems would be prepared on."""
import types

import numpy as np
import pytest

from dataset_spec.model import Buffer, Problem
from dataset_spec.trials import trial_count, trial_spec
from verify import runner
from verify.options import VerifyOptions
from verify.trials.inputs import make_trial_inputs

torch = pytest.importorskip("torch")

SOURCE = '''
def f(inputs, problem):
    return {"out": inputs["x"] * 2.0}
'''


def _problem(index: int) -> Problem:
    return Problem(f"p{index}", "custom", [Buffer("x", "float32", (8, 64 + index)),
                                           Buffer("out", "float32", (8, 64 + index), "out")],
                   params={"reference": "user_ref_ahead:f", "reference_source": SOURCE})


def _run(tmp_path, monkeypatch, groups: int):
    monkeypatch.setattr(runner, "prepare_device", lambda problem, *args: torch.device("cpu"))
    monkeypatch.setattr(runner._Run, "_prepare_future", lambda self, *args: None)  # the draws alone
    rows = [(f"g{i}", [types.SimpleNamespace(problem=_problem(i), status="built", arch="sm_80")])
            for i in range(groups)]
    run = runner._Run(rows, tmp_path / "out", VerifyOptions(racecheck=False), None, (9, 0), None)
    return run, rows


def _host_drawn(problem: Problem) -> list:
    return [t for t in range(trial_count(problem)) if not runner.device_makes(problem, t)]


def test_the_next_groups_host_trials_start_ahead_and_are_drawn_once(tmp_path, monkeypatch):
    run, rows = _run(tmp_path, monkeypatch, runner.DRAW_AHEAD + 3)
    try:
        assert run.take(0) is not None
        ahead = {key[0] for key in run.host_trials}
        assert ahead == {group_id for group_id, _ in rows[:runner.DRAW_AHEAD]}
        group_id, members = rows[1]
        problem = members[0].problem
        stress = _host_drawn(problem)
        assert stress and [trial_spec(problem, t).kind for t in stress] == ["stress"]
        drawn = run.host_trials[(group_id, problem.digest(), stress[0])]
        assert run._host_trial(problem, group_id, stress[0]) is drawn  # the preparation takes the same draw
        want = make_trial_inputs(problem, group_id, stress[0], run.trial_salt)
        np.testing.assert_array_equal(drawn.result().storage["x"], want.storage["x"])
        run.forget_prepared(group_id)
        assert all(key[0] != group_id for key in list(run.host_trials) + list(run.host_trial_bytes))
    finally:
        run.close()


def test_no_group_is_drawn_ahead_past_the_byte_bound(tmp_path, monkeypatch):
    per_trial = runner.drawn_bytes(_problem(0))
    assert per_trial == 8 * 64 * (8 + 4)
    monkeypatch.setattr(runner, "DRAW_AHEAD_BYTES", 2 * per_trial + per_trial // 2)
    run, rows = _run(tmp_path, monkeypatch, runner.DRAW_AHEAD + 1)
    try:
        run.take(0)
        assert sorted(key[0] for key in run.host_trials) == ["g0", "g1"]
    finally:
        run.close()
