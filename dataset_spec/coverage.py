"""Value coverage: the values and row patterns a problem's trials must reach, and what a
trial's drawn inputs and reference actually hold.

Each op declares its items (``coverage_items``): per float input buffer drawn from a
distribution, every binade of its domain (``OpSpec.domain``), subnormals where the domain
reaches them, +0 and -0, the dtype's top binade where the domain reaches it, and NaN and
infinities where the op's stress rows carry them (its reference defines the result); per
integer input buffer drawn over a range, 0, +-1, both ends and the values next to them;
then the op's own items (``OpSpec.coverage``): structured rows (all-zero rows and columns
of GEMM operands, softmax rows beyond exp's range, norm rows with infinities, C of NaN and
infinities at beta = 0) and outputs (subnormal results, an FP8 output's top binade, small
integer results). ``measure`` counts, for one trial, how often each item occurs in the
stored inputs and the float64 reference; ``measure_trials`` sums them over a group's trials,
which ``ptxds verify`` records as ``provenance.verify.coverage``.

Items are plain data (``ops.items.CoverageItem``, which the op families import); how each
kind (``what``) is counted lives here.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .model import Problem
from .numerics import FORMATS
from .ops.items import (ROW_KINDS, VALUE_KINDS, CoverageItem, float_input_items, integer_input_items,  # noqa: F401
                        output_items, small_integer_items, top_binade_floor)

# softmax: exp underflows in float32 below -103.3, so rows spread past this lose terms
EXP_RANGE = 104.0


NEGATIVE_KINDS = ("neg_zero", "neg_inf")  # value items a buffer drawn as magnitudes never holds


def coverage_items(problem: Problem) -> list:
    """Every item ``problem``'s trials must draw: the per-buffer items of its inputs, then
    the op's own (``OpSpec.coverage``). Declared from the op and the buffers, not from the
    trial plan, so a problem that narrows its trial kinds shows what it no longer draws."""
    from .ops import get_op
    from .ops.spec import nonnegative_inputs
    from .trials import FLOAT_DISTRIBUTIONS, is_float
    op = get_op(problem.op)
    magnitudes = nonnegative_inputs(problem)
    items = []
    for buf in problem.buffers:
        if buf.role not in ("in", "inout") or buf.table or op.derives(problem, buf.name):
            continue
        if is_float(buf.dtype) and buf.dtype in FORMATS:
            if buf.init is not None and buf.init.kind in FLOAT_DISTRIBUTIONS:
                drawn = float_input_items(problem, buf.name, op.domain(problem, buf.name))
                if buf.name in magnitudes:  # drawn as magnitudes: its trials hold no negative value
                    drawn = [i for i in drawn if i.what not in NEGATIVE_KINDS]
                items += drawn
        elif op.integer_range is not None:
            span = op.integer_range(problem, buf)
            if span is not None:
                items += integer_input_items(buf.name, span)
    if op.coverage is not None:
        items += op.coverage(problem)
    seen, unique = set(), []
    for item in items:
        if item.key not in seen:
            seen.add(item.key)
            unique.append(item)
    return unique


def _host(value) -> np.ndarray:
    """A float64 numpy array of an input or reference (torch tensors are brought back)."""
    if hasattr(value, "detach"):
        value = value.detach().to("cpu").numpy()
    return np.asarray(value, dtype=np.float64)


def _rows(values: np.ndarray, axis) -> np.ndarray:
    """(rows, length): the 1-D slices of ``values`` along ``axis``."""
    axis = -1 if axis is None else int(axis)
    if values.ndim == 0:
        return values.reshape(1, 1)
    moved = np.moveaxis(values, axis, -1)
    return moved.reshape(-1, moved.shape[-1])


def _count_values(values: np.ndarray, dtype: str, wanted: list) -> dict:
    """{item key: elements} for value items of one buffer."""
    flat = values.reshape(-1)
    out = {}
    finite = np.isfinite(flat)
    magnitude = np.abs(flat)
    magnitude[~finite] = 0.0
    binades = [i for i in wanted if i.what == "binade"]
    if binades:
        normal = magnitude[(magnitude > 0) & (magnitude >= FORMATS[dtype].tiny if dtype in FORMATS else True)]
        # the exponent field of the float64 bits: frexp's float work is three times slower
        exponents = ((normal.view(np.uint64) >> np.uint64(52)).astype(np.int64) & 0x7FF) - 1023
        # a histogram, not np.unique: a sort of every element took seconds per trial at llm sizes
        low = int(exponents.min()) if exponents.size else 0
        counts = np.bincount(exponents - low) if exponents.size else np.zeros(0, dtype=np.int64)
        by_exponent = {low + i: int(c) for i, c in enumerate(counts) if c}
        for item in binades:
            out[item.key] = int(by_exponent.get(int(item.arg), 0))
    for item in wanted:
        what = item.what
        if what == "binade":
            continue
        if what == "subnormal":
            count = np.count_nonzero((magnitude > 0) & (magnitude < FORMATS[dtype].tiny)) if dtype in FORMATS else 0
        elif what == "zero":
            count = np.count_nonzero((flat == 0) & ~np.signbit(flat))
        elif what == "neg_zero":
            count = np.count_nonzero((flat == 0) & np.signbit(flat))
        elif what == "top_binade":
            count = np.count_nonzero(finite & (magnitude >= top_binade_floor(dtype))) if dtype in FORMATS else 0
        elif what == "nan":
            count = np.count_nonzero(np.isnan(flat))
        elif what == "inf":
            count = np.count_nonzero(np.isposinf(flat))
        elif what == "neg_inf":
            count = np.count_nonzero(np.isneginf(flat))
        elif what == "int":
            count = np.count_nonzero(flat == float(item.arg))
        else:
            continue
        out[item.key] = int(count)
    return out


def _count_rows(values: np.ndarray, item: CoverageItem) -> int:
    """Rows (or slices, or the whole buffer) of one row kind."""
    what = item.what
    if what == "nonfinite_all":
        flat = values.reshape(-1)
        return int(flat.size > 0 and not np.isfinite(flat).any() and np.isnan(flat).any() and np.isinf(flat).any())
    if what == "zero_slice":  # one index along the axis whose slice across the other axes is all zero
        rows = _rows(values, item.arg)
        return int(np.count_nonzero((rows == 0).all(axis=0))) if rows.shape[0] > 1 else 0
    rows = _rows(values, item.arg)
    if what == "zero_row":
        return int(np.count_nonzero((rows == 0).all(axis=1))) if rows.shape[1] > 1 else 0
    if what in ("inf_row", "neg_inf_row"):
        test = np.isposinf if what == "inf_row" else np.isneginf
        return int(np.count_nonzero(test(rows).any(axis=1)))
    finite_rows = np.isfinite(rows).all(axis=1) & (rows.shape[1] > 1)
    with np.errstate(invalid="ignore"):
        if what == "negative_spread_row":
            hit = finite_rows & (rows.max(axis=1) < 0) & (rows.max(axis=1) - rows.min(axis=1) > EXP_RANGE)
        elif what in ("max_first_far", "max_last_far"):
            column = 0 if what == "max_first_far" else rows.shape[1] - 1
            if rows.shape[1] < 2:
                return 0
            others = np.delete(rows, column, axis=1).max(axis=1)
            hit = finite_rows & (rows[:, column] - others > EXP_RANGE)
        else:
            return 0
    return int(np.count_nonzero(hit))


def _now(fn, *args):
    return fn(*args)


def _count_tensor(source, shape, dtype: str, values_wanted: list, rows_wanted: list) -> dict:
    import torch
    from . import coverage_tensor
    tensor = source.detach().to(torch.float64).reshape(shape)
    out = coverage_tensor.count_values(tensor, dtype, values_wanted, EXP_RANGE)
    for item in rows_wanted:
        out[item.key] = coverage_tensor.count_rows(tensor, item, EXP_RANGE)
    return out


def measure(problem: Problem, items: list, values: dict, reference: Optional[dict] = None,
            on_device=None) -> dict:
    """{item key: count} of one trial: value items count elements, row items rows (or
    slices), ``nonfinite_all`` 1 when the whole buffer is NaN and infinities. Inputs are
    the trial's stored values, outputs its float64 reference (converted as stored). A
    buffer that is a torch tensor is counted where it lives, through ``on_device(fn,
    *args)`` where given (the verifier holds its GPU's quiet lock there)."""
    reference = reference or {}
    by_buffer = {}
    for item in items:
        by_buffer.setdefault(item.buffer, []).append(item)
    out = {}
    for name, wanted in by_buffer.items():
        source = values.get(name) if name in values else reference.get(name)
        if source is None:
            out.update({item.key: 0 for item in wanted})
            continue
        dtype = problem.buffer(name).dtype
        values_wanted = [i for i in wanted if i.what in VALUE_KINDS]
        if hasattr(source, "detach"):  # a tensor is counted where it lives (coverage_tensor.py)
            shape = problem.buffer(name).shape
            out.update((on_device or _now)(_count_tensor, source, shape, dtype, values_wanted,
                                           [i for i in wanted if i.what in ROW_KINDS]))
            continue
        array = _host(source).reshape(problem.buffer(name).shape)
        out.update(_count_values(array, dtype, values_wanted))
        for item in wanted:
            if item.what in ROW_KINDS:
                out[item.key] = _count_rows(array, item)
    return out


def measure_trials(problem: Problem, trials: list, references: list, items: Optional[list] = None,
                   on_device=None) -> dict:
    """{item key: count} summed over a group's trials (``trials``: each with ``values``;
    ``references``: per trial, output name -> reference; ``on_device``: see ``measure``)."""
    items = coverage_items(problem) if items is None else items
    total = {item.key: 0 for item in items}
    for index, trial in enumerate(trials):
        reference = references[index] if index < len(references) else {}
        for key, count in measure(problem, items, dict(trial.values), reference, on_device).items():
            total[key] += count
    return total


def missing(counts: dict) -> list:
    """The declared items no trial drew."""
    return sorted(key for key, count in counts.items() if not count)


def family_of(key: str) -> str:
    """An item key with a binade's exponent dropped ("A:binade:-3" -> "A:binade")."""
    parts = key.split(":")
    return ":".join(parts[:2]) if len(parts) > 2 and parts[1] == "binade" else key
