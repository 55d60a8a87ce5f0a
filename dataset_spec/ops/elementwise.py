"""Elementwise ops: vector_add and square."""
from __future__ import annotations

import math

import numpy as np

from ..numerics import FORMATS
from .spec import OpSpec, _fmt, _inputs_of, _out_dtype, _out_name, range_int_sum


def ref_vector_add(inputs, problem):
    x, y = _inputs_of(problem, inputs, "x", "y")
    with np.errstate(invalid="ignore"):  # inf + -inf is NaN, as in IEEE
        return {_out_name(problem): x + y}


def ref_square(inputs, problem):
    (x,) = _inputs_of(problem, inputs, "x")
    return {_out_name(problem): x * x}


def scale_vector_add(inputs, problem):
    """An IEEE add is exactly rounded (out = (x + y)(1 + d), |d| <= u): no term scales
    with |x| + |y|, so cancellation earns no allowance."""
    out = _out_name(problem)
    return {out: np.broadcast_to(np.float64(0.0), problem.buffer(out).shape)}  # one value, no full-size array


def pointwise_vector_add(inputs, problem, reference):
    """A float32 add rounded again to a narrower output (double rounding): u_acc |ref|."""
    out = _out_name(problem)
    narrower = problem.buffer(out).dtype not in ("float32", "float64")
    return {out: abs(reference[out]) * (1.0 if narrower else 0.0)}  # abs: numpy arrays and torch tensors


def range_vector_add(problem, buffer):
    return _fmt(buffer.dtype).tiny, _fmt(_out_dtype(problem)).max_finite / 2


def range_square(problem, buffer):
    out = _fmt(_out_dtype(problem))
    return math.sqrt(out.tiny), math.sqrt(out.max_finite) / 2


def stress_vector_add(problem, buffer, context, previous):
    from ..stress import vector_add_stress
    return vector_add_stress(buffer.name, buffer.shape, context, previous)


def stress_square(problem, buffer, context, previous):
    from ..stress import square_stress
    return square_stress(buffer.shape, context)


def coverage_vector_add(problem) -> list:
    """NaN and infinities of both signs in x and y (inf + -inf is NaN), and the sum's
    subnormal and top-binade results."""
    from .items import CoverageItem, output_items
    out = _out_name(problem)
    if problem.buffer("x").dtype not in FORMATS:
        return output_items(problem, out)
    items = [CoverageItem("x", "nan"), CoverageItem("x", "inf"), CoverageItem("y", "neg_inf"),
             CoverageItem(out, "nan"), CoverageItem(out, "top_binade")]
    return items + [CoverageItem(out, "subnormal")] if problem.buffer(out).dtype in FORMATS else items


def coverage_square(problem) -> list:
    from .items import CoverageItem
    return [CoverageItem("x", "nan"), CoverageItem("x", "inf"), CoverageItem("x", "neg_inf")]


OPS = [
    OpSpec("vector_add", ref_vector_add, lambda p: 1, "out = x + y", scale_vector_add, range_vector_add,
           "0 (exactly rounded)", range_int_sum(lambda p: 1, operands=2), pointwise_vector_add, stress_vector_add,
           "|out_i| when the output is narrower than float32 (double rounding), else 0", coverage=coverage_vector_add,
           sizes="elementwise", array_api=True, device_stress=True),
    OpSpec("square", ref_square, lambda p: 1, "out = x * x", None, range_square, "x * x",
           stress=stress_square, coverage=coverage_square,
           sizes="elementwise", array_api=True, device_stress=True),
]
