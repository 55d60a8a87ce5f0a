"""The Problem of a TVM task: op ``custom`` whose reference is the task's own PrimFunc in
float64 (reference.py), one buffer per PrimFunc parameter, named as the parameter (the
lowered kernels' pointer parameters carry the same names), inputs drawn as their role in
the model says, and the input domain that keeps every float16 value the task stores
finite (the search Inductor's captures use, dataset_spec.mugraph.search_domain)."""
from __future__ import annotations

import math

import numpy as np

from dataset_spec.model import Buffer, Distribution, Problem

SOURCE = "tvm-models"
# TIR dtypes a row's buffers store as another of the same bytes: a bool is one byte, 0 or 1
STORED_AS = {"bool": "uint8"}
DOMAIN_START, DOMAIN_LOW, DOMAIN_FLOOR = 2.0 ** 10, 2.0 ** -10, 2.0 ** -8


class TaskProblemError(ValueError):
    """The task's inputs cannot be drawn as its function requires."""


def _kind(dtype: str) -> str:
    return "float" if dtype.startswith(("float", "bfloat")) else "bool" if dtype == "bool" else "int"


def _index_extent(program: dict, buffer: str):
    """n when ``buffer``'s values index a dimension of extent n of another buffer (a
    gather's indices), else None."""
    found = []

    def visit(expr, under=None):
        if not isinstance(expr, list):
            return
        if expr[0] == "load":
            if expr[1] == buffer and under is not None:
                found.append(under)
            shape = program["buffers"][expr[1]]["shape"]
            for dim, index in enumerate(expr[2]):
                visit(index, shape[dim] if dim < len(shape) else None)
            return
        for part in expr[1:]:
            if isinstance(part, list):
                visit(part, under)

    for block in program["blocks"]:
        visit(block["value"])
        for index in block["store"][1]:
            visit(index)
    return min(found) if found else None


def _init(program: dict, name: str, role: str) -> Distribution:
    dtype = program["buffers"][name]["dtype"]
    kind = _kind(dtype)
    if role.startswith("indices:"):
        return Distribution("randint", {"low": 0, "high": int(role.split(":")[1])})
    if kind == "bool":
        return Distribution("randint", {"low": 0, "high": 2})
    if kind == "int":
        extent = _index_extent(program, name)
        if extent is None:
            raise TaskProblemError(f"integer input {name} ({role}) has no known range")
        return Distribution("randint", {"low": 0, "high": int(extent)})
    return Distribution("normal", {"mean": 0.0, "std": 1.0})


def input_inits(task) -> dict:
    """{input buffer: how the verifier draws it}; raises TaskProblemError for an integer
    input whose range neither its role nor its use as an index states."""
    program = task.program
    return {name: _init(program, name, task.roles.get(name, ""))
            for name in program["params"] if name not in program["outputs"]}


def task_buffers(task) -> list:
    """One Buffer per PrimFunc parameter, in call order."""
    program = task.program
    inits = input_inits(task)
    buffers = []
    for name in program["params"]:
        entry = program["buffers"][name]
        shape = tuple(entry["shape"]) or (1,)
        dtype = STORED_AS.get(entry["dtype"], entry["dtype"])
        if name in program["outputs"]:
            buffers.append(Buffer(name, dtype, shape, "out"))
        else:
            buffers.append(Buffer(name, dtype, shape, "in", inits[name]))
    return buffers


def bare_problem(model: str, task) -> Problem:
    """The task's buffers without its reference: the problem of a row that says why the
    task has no members."""
    return Problem(f"{model}/{task.name}", "custom", task_buffers(task), {"reference": "reference:reference"})


def task_problem(model: str, task) -> Problem:
    """The Problem of ``task`` (tasks.Task) of ``model``."""
    from .reference import reference_source
    source = reference_source(task.program, f"TVM task {task.name} of {model}")
    params = {"reference": "reference:reference", "reference_source": source, "reduction_length": 1}
    problem = Problem(f"{model}/{task.name}", "custom", task_buffers(task), params)
    domain = input_domain(problem)
    if domain:
        params["input_range"] = domain
    return problem


def input_domain(problem: Problem) -> dict:
    """{float input: [lo, hi]}: the magnitudes the verifier's wide, edge and stress trials may
    draw, hi the largest (at most DOMAIN_START) for which every narrow float value the task
    makes stays below half its dtype's largest finite value on search_domain's adversarial
    inputs. Raises TaskProblemError when even DOMAIN_FLOOR overflows."""
    from dataset_spec.mugraph import FP16_SAFE, MuGraphSemanticsError, search_domain

    from .reference import reference_module
    module = reference_module(problem.params["reference_source"])
    floats = [b for b in problem.buffers if b.role == "in" and _kind(b.dtype) == "float"]
    if not floats:
        return {}
    rng = np.random.default_rng(0)
    fixed = {b.name: rng.integers(b.init.params["low"], b.init.params["high"], b.shape).astype(np.float64)
             for b in problem.buffers if b.role == "in" and b not in floats}

    def largest(arrays):
        inputs = dict(fixed, **{b.name: np.asarray(a) for b, a in zip(floats, arrays)})
        return FP16_SAFE * module.narrow_peak(inputs)

    try:
        hi = search_domain(largest, [b.shape for b in floats], DOMAIN_START, DOMAIN_FLOOR)
    except MuGraphSemanticsError:
        raise TaskProblemError(f"no input magnitude >= {DOMAIN_FLOOR} keeps the task's stored values finite") from None
    hi = math.floor(hi * 2 ** 10) / 2 ** 10
    return {b.name: [DOMAIN_LOW, hi] for b in floats}


def check_reference(problem: Problem) -> None:
    """The reference evaluates, with its error scale, on one normal draw (what the verifier
    will ask of it)."""
    from dataset_spec.ops import get_op
    rng = np.random.default_rng(0)
    inputs = {}
    for b in problem.buffers:
        if b.role == "in":
            if b.init is not None and b.init.kind == "randint":
                inputs[b.name] = rng.integers(b.init.params["low"], b.init.params["high"], b.shape).astype(np.float64)
            else:
                inputs[b.name] = rng.standard_normal(b.shape)
    op = get_op("custom")
    reference = op.reference(inputs, problem)
    op.bounds(inputs, problem, reference)
