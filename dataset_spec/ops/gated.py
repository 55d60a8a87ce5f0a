"""Gated activations of LLM MLPs, elementwise over a (gate) and b (up): swiglu
(c = silu(a) * b) and geglu (c = gelu_tanh(a) * b).

Libraries compute the activation in float32 and round it to b's dtype before the product
(Liger-Kernel's ``silu(a).cast(b.dtype) * b``, Hugging Face's ``act_fn(gate) * up`` in the
model's dtype): two roundings of a narrow output, which is the ops' default
(``params.output_roundings`` overrides it). ``params.gate_multiplier`` scales a before the
activation (Liger's swiglu takes it; default 1).

Error model: c's roundings are relative (S = |c|); the activation's own float32 error is
relative to it too, except where exp's argument carries roundoff: sigmoid(a) = 1 / (1 +
exp(-a)) turns the rounding of a's product with log2(e) into a relative error of about
|a| u_acc (P = |c| (4 |a| + 6)); gelu_tanh's 1 + tanh(z) cancels for negative z, where
tanh's error is absolute (P adds |0.5 a b| (4 (|z| + 1)) for those). The activation's
rounding to b's dtype is absolute below its smallest normal (P adds tiny |b| / u_acc).
"""
from __future__ import annotations

import math

import numpy as np

from ..numerics import FORMATS
from .spec import OpSpec, _fmt, _inputs_of, _main_out, array_namespace, narrow_output

SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
GELU_CUBIC = 0.044715
# sigmoid(a) for a below -EXP_LIMIT: exp(-a) overflows float32 (88.72), and a kernel's
# silu(a) becomes 0 where the function is about 1e-37, a relative error of 1; the default
# domain keeps |a| below it (params.input_range widens it for a kernel that handles it).
EXP_LIMIT = 80.0


def _gate(problem, a):
    return a * float(problem.params.get("gate_multiplier", 1.0))


def _silu(a):
    with np.errstate(over="ignore"):
        return a / (1.0 + array_namespace(a).exp(-a))


def _gelu_tanh(a):
    z = SQRT_2_OVER_PI * (a + GELU_CUBIC * a * a * a)
    return 0.5 * a * (1.0 + array_namespace(z).tanh(z)), z


def ref_swiglu(inputs, problem):
    a, b = _inputs_of(problem, inputs, "a", "b")
    with np.errstate(invalid="ignore"):
        return {_main_out(problem): _silu(_gate(problem, a)) * b}


def _subnormal_activation(problem, b):
    """The activation rounded to b's dtype is absolute below its smallest normal (subnormal
    spacing, or a flush to zero of a subnormal float32 intermediate): at most tiny |b| in c,
    as a P term (P u_acc = tiny |b|)."""
    fmt = _fmt(problem.buffer("b").dtype)
    return abs(b) * (fmt.tiny / FORMATS["float32"].unit_roundoff)


def pointwise_swiglu(inputs, problem, reference):
    a, b = _inputs_of(problem, inputs, "a", "b")
    out = _main_out(problem)
    return {out: abs(reference[out]) * (4.0 * abs(_gate(problem, a)) + 6.0) + _subnormal_activation(problem, b)}


def ref_geglu(inputs, problem):
    a, b = _inputs_of(problem, inputs, "a", "b")
    approximate = str(problem.params.get("approximate", "tanh"))
    if approximate != "tanh":
        raise ValueError(f"problem {problem.problem_id}: geglu takes params.approximate = 'tanh' "
                         f"(Liger's and GPT-2's gelu), got {approximate!r}")
    with np.errstate(invalid="ignore", over="ignore"):
        return {_main_out(problem): _gelu_tanh(a)[0] * b}


def pointwise_geglu(inputs, problem, reference):
    a, b = _inputs_of(problem, inputs, "a", "b")
    out = _main_out(problem)
    with np.errstate(invalid="ignore", over="ignore"):
        _, z = _gelu_tanh(a)
        cancelling = 0.5 * abs(a * b) * (4.0 * (abs(z) + 1.0)) * (z < 0)
    return {out: abs(reference[out]) * 6.0 + array_namespace(cancelling).nan_to_num(cancelling, posinf=math.inf)
            + _subnormal_activation(problem, b)}


def range_swiglu(problem, buffer):
    """a: |a| below EXP_LIMIT (sigmoid's exp stays finite in float32); b: the product fits."""
    out = _fmt(problem.buffer(_main_out(problem)).dtype)
    if buffer.name == "a":
        return _fmt(buffer.dtype).tiny, min(EXP_LIMIT, _fmt(buffer.dtype).max_finite)
    return _fmt(buffer.dtype).tiny, out.max_finite / (4 * EXP_LIMIT)


def range_geglu(problem, buffer):
    """a: a^3 stays finite in float32 (gelu_tanh's cubic); b: the product fits."""
    out = _fmt(problem.buffer(_main_out(problem)).dtype)
    cube_root = FORMATS["float32"].max_finite ** (1.0 / 3.0) / 4
    a_high = min(cube_root, out.max_finite / 4, _fmt(problem.buffer("a").dtype).max_finite)
    if buffer.name == "a":
        return _fmt(buffer.dtype).tiny, a_high
    # |gelu(a)| <= |a|: the product stays below a quarter of the output's range for the
    # largest a the domain allows (a float16 output: |b| up to 1, not an empty range)
    return _fmt(buffer.dtype).tiny, out.max_finite / (4 * a_high)


def roundings_gated(problem, name=None) -> int:
    """The activation rounded to b's dtype, then the product's rounding."""
    return 2 if narrow_output(problem, _main_out(problem)) else 1


OPS = [
    OpSpec("swiglu", ref_swiglu, lambda p: 1, "c = silu(gate_multiplier * a) * b, elementwise",
           None, range_swiglu, "|c_i|", pointwise_scale=pointwise_swiglu,
           pointwise_text="|c_i| (4 |a_i| + 6) + tiny_b |b_i| / u_acc", roundings=roundings_gated, array_api=True),
    OpSpec("geglu", ref_geglu, lambda p: 1, "c = gelu_tanh(a) * b, elementwise (params.approximate: tanh)",
           None, range_geglu, "|c_i|", pointwise_scale=pointwise_geglu,
           pointwise_text="6 |c_i|, + 2 |a_i b_i| (|z_i| + 1) where z_i < 0 (1 + tanh z cancels), + tiny_b |b_i| / u_acc",
           roundings=roundings_gated, array_api=True),
]
