"""The problem registry: float64 reference functions and tolerance policies per op.

Each op maps the group's float64 inputs to the float64 value every out/inout buffer must
hold. Tolerance grows with the storage dtype's precision and the reduction length (the
number of terms summed per output element), so a K=4096 bf16 GEMM is judged fairly
against a 1M-element fp32 vector add. ``problem.tolerance`` (atol/rtol) overrides both.
"""
from __future__ import annotations

import importlib
import math
import sys
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .model import Problem, SpecError

# Unit roundoff of each storage dtype (half an ulp at 1.0).
UNIT_ROUNDOFF = {
    "float16": 2.0 ** -11, "bfloat16": 2.0 ** -8, "float32": 2.0 ** -24, "float64": 2.0 ** -53,
}


@dataclass(frozen=True)
class OpSpec:
    """How the verifier judges one op."""
    name: str
    reference: Callable  # (inputs: dict[str, ndarray float64], problem) -> dict[str, ndarray]
    reduction_length: Callable  # (problem) -> int
    description: str = ""

    def tolerance(self, problem: Problem, dtype: str) -> tuple:
        """(atol, rtol) for an output of ``dtype``; problem.tolerance overrides."""
        override = problem.tolerance or {}
        if "atol" in override and "rtol" in override:
            return float(override["atol"]), float(override["rtol"])
        atol, rtol = default_tolerance(dtype, self.reduction_length(problem))
        return float(override.get("atol", atol)), float(override.get("rtol", rtol))


def default_tolerance(dtype: str, reduction_length: int) -> tuple:
    """Output rounding (a few ulps of the dtype) plus accumulation error that grows like
    sqrt(reduction length) ulps of the accumulator (fp32 for the low-precision types)."""
    if dtype not in UNIT_ROUNDOFF:  # integer outputs must match exactly
        return 0.0, 0.0
    u_out = UNIT_ROUNDOFF[dtype]
    u_acc = UNIT_ROUNDOFF["float32"] if dtype != "float64" else UNIT_ROUNDOFF["float64"]
    growth = math.sqrt(max(1, reduction_length))
    rtol = 4 * u_out + 8 * growth * u_acc
    if dtype in ("float16", "bfloat16"):
        # inputs were rounded to the dtype too; sum of rounded products drifts by ~u*sqrt(K)
        rtol += 2 * growth * u_out
    atol = rtol * (1.0 if reduction_length <= 1 else 0.5 * growth)
    return atol, rtol


def _inputs_of(problem: Problem, inputs: dict, *names: str) -> list:
    missing = [n for n in names if n not in inputs]
    if missing:
        raise SpecError(f"problem {problem.problem_id}: op {problem.op} needs buffers {missing}")
    return [inputs[n] for n in names]


def _out_name(problem: Problem) -> str:
    outs = [b.name for b in problem.buffers if b.role in ("out", "inout")]
    return outs[0]


def _shaped(problem: Problem, name: str, array: np.ndarray) -> np.ndarray:
    return array.reshape(problem.buffer(name).shape)


def ref_vector_add(inputs, problem):
    x, y = _inputs_of(problem, inputs, "x", "y")
    return {_out_name(problem): x + y}


def ref_square(inputs, problem):
    (x,) = _inputs_of(problem, inputs, "x")
    return {_out_name(problem): x * x}


def ref_softmax(inputs, problem):
    (x,) = _inputs_of(problem, inputs, "x")
    x = x.reshape(-1, x.shape[-1])
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    out = e / e.sum(axis=-1, keepdims=True)
    return {_out_name(problem): _shaped(problem, _out_name(problem), out)}


def _rows(x, problem):
    n = problem.params.get("N") or x.shape[-1]
    return x.reshape(-1, n)


def ref_rmsnorm(inputs, problem):
    x, w = _inputs_of(problem, inputs, "x", "w")
    eps = float(problem.params.get("eps", 1e-6))
    x2 = _rows(x, problem)
    out = x2 / np.sqrt((x2 * x2).mean(axis=-1, keepdims=True) + eps) * w.reshape(1, -1)
    return {_out_name(problem): _shaped(problem, _out_name(problem), out)}


def ref_layernorm(inputs, problem):
    x, w, b = _inputs_of(problem, inputs, "x", "w", "b")
    eps = float(problem.params.get("eps", 1e-5))
    x2 = _rows(x, problem)
    mean = x2.mean(axis=-1, keepdims=True)
    var = ((x2 - mean) ** 2).mean(axis=-1, keepdims=True)
    out = (x2 - mean) / np.sqrt(var + eps) * w.reshape(1, -1) + b.reshape(1, -1)
    return {_out_name(problem): _shaped(problem, _out_name(problem), out)}


def _logical(array: np.ndarray, layout: str) -> np.ndarray:
    """Buffers hold storage order (row-major arrays); "col" stores the transpose."""
    if layout not in ("row", "col"):
        raise SpecError(f"gemm layout must be 'row' or 'col', got {layout!r}")
    return array if layout == "row" else array.T


def ref_gemm(inputs, problem):
    """D = alpha * A @ B + beta * C, each operand in its recorded layout."""
    p = problem.params
    a, b = _inputs_of(problem, inputs, "A", "B")
    a = _logical(a.reshape(problem.buffer("A").shape), p.get("layout_a", "row"))
    b = _logical(b.reshape(problem.buffer("B").shape), p.get("layout_b", "row"))
    d = float(p.get("alpha", 1.0)) * (a @ b)
    beta = float(p.get("beta", 0.0))
    out = _out_name(problem)
    layout_c = p.get("layout_c", "row")
    if beta != 0.0:
        c_name = "C" if "C" in inputs else out
        c = _logical(inputs[c_name].reshape(problem.buffer(c_name).shape), layout_c)
        d = d + beta * c
    return {out: _logical(d, layout_c)}


def gemm_reduction_length(problem: Problem) -> int:
    p = problem.params
    if "K" in p:
        return int(p["K"])
    shape = problem.buffer("A").shape
    return int(shape[1] if p.get("layout_a", "row") == "row" else shape[0])


def _last_dim(problem: Problem) -> int:
    return int(problem.buffer("x").shape[-1]) if any(b.name == "x" for b in problem.buffers) else 1


def ref_custom(inputs, problem):
    """A user reference given as ``module:function`` in problem.params["reference"];
    ``problem.params["reference_path"]`` (a folder) is put on sys.path first."""
    target = problem.params.get("reference")
    if not target or ":" not in str(target):
        raise SpecError(f"problem {problem.problem_id}: op custom needs params.reference "
                        f"= 'module:function', got {target!r}")
    folder = problem.params.get("reference_path")
    if folder and folder not in sys.path:
        sys.path.insert(0, folder)
    module_name, func_name = str(target).split(":", 1)
    try:
        func = getattr(importlib.import_module(module_name), func_name)
    except (ImportError, AttributeError) as exc:
        raise SpecError(f"problem {problem.problem_id}: cannot import reference {target!r}: {exc}") from None
    return func(inputs, problem)


OPS = {
    spec.name: spec for spec in [
        OpSpec("vector_add", ref_vector_add, lambda p: 1, "out = x + y"),
        OpSpec("square", ref_square, lambda p: 1, "out = x * x"),
        OpSpec("softmax", ref_softmax, _last_dim, "row softmax over the last dim of x"),
        OpSpec("rmsnorm", ref_rmsnorm, _last_dim, "x / rms(x) * w per row"),
        OpSpec("layernorm", ref_layernorm, _last_dim, "(x - mean) / std * w + b per row"),
        OpSpec("gemm", ref_gemm, gemm_reduction_length, "D = alpha A@B + beta C with layouts"),
        OpSpec("custom", ref_custom,
               lambda p: int(p.params.get("reduction_length", 1)), "user reference module:function"),
    ]
}


def get_op(name: str) -> OpSpec:
    try:
        return OPS[name]
    except KeyError:
        raise SpecError(f"unknown op {name!r}; known ops: {', '.join(sorted(OPS))} "
                        f"(or op 'custom' with params.reference = 'module:function')") from None
