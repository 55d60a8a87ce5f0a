"""Rotary position embedding (RoPE), applied in place to q and k (role inout).

Layout (Liger-Kernel's and Hugging Face's): q (batch, seq, q_heads, head_dim), k (batch,
seq, kv_heads, head_dim); cos and sin (1 or batch, seq, rotary_dim) or (seq, rotary_dim).
The first ``params.rotary_dim`` (default head_dim) entries of each head rotate, the rest are
left as they are. With x1, x2 the two halves of the rotary part and c, s the FIRST half of
the cos/sin row:

    out1 = x1 c - x2 s,   out2 = x2 c + x1 s

Kernels read only the first half of the tables, whose halves are equal in every model
(``cat(freqs, freqs)``), so the reference reads only it too and a trial's second halves are
never used. ``params.inverse`` (false) applies the inverse rotation, sin negated
(out1 = x1 c + x2 s, out2 = x2 c - x1 s): the backward pass of RoPE. Error model: two products and a sum in float32, then the store: S = |x1 c| +
|x2 s| (resp. |x2 c| + |x1 s|), n = 1.
"""
from __future__ import annotations

import numpy as np

from ..model import SpecError
from .spec import OpSpec, _fmt, _inputs_of, is_tensor

ROTATED = ("q", "k")
TABLE_RANGE = (2.0 ** -10, 1.0)  # cos and sin values


def _rotary_dim(problem, x) -> int:
    head_dim = x.shape[-1]
    rd = int(problem.params.get("rotary_dim", head_dim))
    if rd % 2 or not 0 < rd <= head_dim:
        raise SpecError(f"problem {problem.problem_id}: params.rotary_dim {rd} must be even and at most "
                        f"head_dim {head_dim}")
    return rd


def _table(table, x):
    """The first half of each cos/sin row, shaped to broadcast over x's heads:
    (batch or 1, seq, 1, rd/2)."""
    rows = table.reshape((-1,) + table.shape[-2:]) if table.ndim >= 2 else table.reshape(1, 1, -1)
    half = rows.shape[-1] // 2
    return rows[..., :half].reshape(rows.shape[0], rows.shape[1], 1, half)


def _rotate(problem, x, cos, sin, magnitude: bool):
    rd = _rotary_dim(problem, x)
    half = rd // 2
    c, s = _table(cos, x)[..., :half], _table(sin, x)[..., :half]
    if problem.params.get("inverse", False):
        s = -s
    x1, x2 = x[..., :half], x[..., half:rd]
    # a float64 copy on x's side: numpy, or a torch tensor on its device (the verifier
    # prepares rope's groups on the GPU, verify/trials/device_prepare.py)
    out = x.detach().double().clone() if is_tensor(x) else np.array(x, dtype=np.float64, copy=True)
    if magnitude:
        out[..., :half] = abs(x1 * c) + abs(x2 * s)
        out[..., half:rd] = abs(x2 * c) + abs(x1 * s)
        out[..., rd:] = abs(x[..., rd:])
    else:
        out[..., :half] = x1 * c - x2 * s
        out[..., half:rd] = x2 * c + x1 * s
    return out


def _rotated(problem):
    names = [b.name for b in problem.buffers if b.role in ("out", "inout") and b.name in ROTATED]
    if not names:
        raise SpecError(f"problem {problem.problem_id}: op rope rotates buffers named q and/or k (role inout)")
    return names


def ref_rope(inputs, problem):
    cos, sin = _inputs_of(problem, inputs, "cos", "sin")
    return {name: _rotate(problem, _inputs_of(problem, inputs, name)[0], cos, sin, False)
            for name in _rotated(problem)}


def scale_rope(inputs, problem):
    cos, sin = _inputs_of(problem, inputs, "cos", "sin")
    return {name: _rotate(problem, _inputs_of(problem, inputs, name)[0], cos, sin, True)
            for name in _rotated(problem)}


def range_rope(problem, buffer):
    if buffer.name in ("cos", "sin"):
        return TABLE_RANGE
    return _fmt(buffer.dtype).tiny, _fmt(buffer.dtype).max_finite / 4


OPS = [
    OpSpec("rope", ref_rope, lambda p: 1, "rotary embedding of q and k in place (first half of each "
           "cos/sin row; params.rotary_dim, params.inverse)", scale_rope, range_rope,
           "|x1 c| + |x2 s| (first half), |x2 c| + |x1 s| (second half)",
           outputs=lambda problem: tuple(_rotated(problem)), array_api=True),
]
