"""What a problem's trials are: the one owner of trial kinds, input domains and integer
ranges. ``trial_plan(problem)`` answers, per trial, its kind and for every input buffer
how it is drawn (over an integer range, as the op's stress rows, or from its ``init``
under a kind, with the float domain that kind needs); ``verify/trials/inputs.py`` only draws the
values the plan names.

Trial kinds change how float buffers are drawn: ``normal`` and ``uniform`` keep the
buffer's mean and spread; ``wide`` gives random signs and magnitudes over the op's whole
safe domain (``OpSpec.domain``); ``edge`` mixes special values into normal data;
``stress`` draws the op's own stress rows (dataset_spec/stress.py); ``small``/``large``
scale the buffer's distribution. Integer input buffers of an op that declares
``integer_range`` are drawn over that range in every kind.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from .model import TRIAL_KINDS, Problem, dtype_kind

DOMAIN_KINDS = ("wide", "edge", "stress")  # kinds that draw over the op's domain
FLOAT_DISTRIBUTIONS = ("normal", "uniform")  # the init kinds a trial kind may swap or reshape

INTEGERS, STRESS, DRAW, TABLE, DERIVED = "integers", "stress", "draw", "table", "derived"


@dataclass(frozen=True)
class BufferPlan:
    """How one in/inout buffer is drawn in one trial. ``how``: ``integers`` (uniformly
    shaped by ``kind`` over ``integer_range``, high exclusive), ``stress`` (the op's stress
    rows over ``domain``), ``draw`` (its ``init`` under ``kind``, '' for as given, with
    ``domain`` for wide/edge), ``table`` (a values table, the same in every trial) or
    ``derived`` (made by the op, ``OpSpec.derive``). ``index`` seeds the buffer's own random stream.
    ``axis``: the axis an integer operand is reduced along (its stress rows lie along it;
    None: the last axis)."""
    name: str
    index: int
    how: str
    kind: str = ""
    domain: Optional[tuple] = None
    integer_range: Optional[tuple] = None
    axis: Optional[int] = None


@dataclass(frozen=True)
class TrialSpec:
    """One trial of a problem: its number, its kind and how each input buffer is drawn."""
    trial: int
    kind: str
    buffers: tuple


def is_float(dtype: str) -> bool:
    return dtype_kind(dtype) == "f"


def problem_trial_kinds(problem: Problem) -> list:
    """The kinds a problem's trials cycle through: its ``trial_kinds`` that are in
    ``model.TRIAL_KINDS`` (others are skipped, as they always were), else ``normal``."""
    return [k for k in (problem.trial_kinds or ["normal"]) if k in TRIAL_KINDS] or ["normal"]


def trial_count(problem: Problem) -> int:
    """Trials that run each of the problem's kinds once."""
    return len(problem_trial_kinds(problem))


def trial_kind(problem: Problem, trial: int) -> str:
    kinds = problem_trial_kinds(problem)
    return kinds[trial % len(kinds)]


def trial_spec(problem: Problem, trial: int) -> TrialSpec:
    """Trial number ``trial`` of ``problem``: its kind and every input buffer's plan."""
    kind = trial_kind(problem, trial)
    integer_inputs = any(b.role in ("in", "inout") and not is_float(b.dtype) for b in problem.buffers)
    # the registry is asked only when the trial needs it, so a float problem of an op this
    # registry lacks still runs its normal trials
    op = _op(problem) if kind in DOMAIN_KINDS or integer_inputs or problem.params.get("derived_inputs") else None
    plans = []
    for index, buf in enumerate(problem.buffers):
        if buf.role not in ("in", "inout") or buf.table == "addresses":
            continue  # an addresses table is written by the verifier once buffers exist
        if buf.table == "values":
            plans.append(BufferPlan(buf.name, index, TABLE))
            continue
        if op is not None and op.derives(problem, buf.name):
            plans.append(BufferPlan(buf.name, index, DERIVED, kind))
            continue
        span = op.integer_range(problem, buf) if (not is_float(buf.dtype) and op is not None
                                                  and op.integer_range is not None) else None
        if span is not None:
            axis = op.reduction_axis(problem, buf) if op.reduction_axis is not None else None
            plans.append(BufferPlan(buf.name, index, INTEGERS, kind, integer_range=tuple(int(v) for v in span),
                                    axis=axis))
        elif is_float(buf.dtype) and kind == "stress" and buf.init.kind in FLOAT_DISTRIBUTIONS:
            plans.append(BufferPlan(buf.name, index, STRESS, kind, domain=op.domain(problem, buf.name)))
        else:
            use_kind = kind if is_float(buf.dtype) and kind != "stress" else ""
            domain = op.domain(problem, buf.name) if use_kind in ("wide", "edge") else None
            plans.append(BufferPlan(buf.name, index, DRAW, use_kind, domain=domain))
    return TrialSpec(trial, kind, tuple(plans))


def trial_plan(problem: Problem, trials: Optional[int] = None) -> list:
    """``TrialSpec`` of each trial (default: one per kind of the problem)."""
    return [trial_spec(problem, t) for t in range(trials or trial_count(problem))]


def stress_values(problem: Problem, plan: BufferPlan, rng, previous: dict):
    """The float64 values of a ``stress`` buffer (``previous``: the buffers drawn before)."""
    return _op(problem).stress_values(problem, problem.buffer(plan.name), rng, plan.domain, previous)


def derived_values(problem: Problem, plan: BufferPlan, rng, previous: dict):
    """The float64 values of a ``derived`` buffer (the op makes them: ``OpSpec.derive``, from
    ``previous``, the buffers drawn before it)."""
    return _op(problem).derive(problem, problem.buffer(plan.name), rng, previous)


def _op(problem: Problem):
    from .ops import get_op  # the registry imports numpy-heavy families: load on first use
    return get_op(problem.op)
