"""``OpSpec``, how the verifier judges one op, and the helpers every family of ops shares
(buffer lookups, integer ranges, row stress patterns)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from ..model import Problem, SpecError, dtype_kind
from ..numerics import FORMATS, BoundTerms, bound_terms
from .items import integer_dtype_range


@dataclass(frozen=True)
class OpSpec:
    """How the verifier judges one op.

    ``error_scale(inputs, problem) -> {out name: float64 array}``: the magnitude scale S of
    each output element (None: ``|reference|``, a purely relative error model).
    ``input_range(problem, buffer) -> (lo, hi)``: smallest and largest magnitude the
    ``wide``/``edge`` trials may give a float input buffer (None: DEFAULT_INPUT_RANGE).
    ``scale_text``: S as a formula, for the docs and the dataset card.
    ``integer_range(problem, buffer) -> (low, high) | None``: the values an integer input
    buffer takes, ``high`` exclusive (sequence letters; a GEMM's operands over their dtype's
    full range, narrowed only where the int32 accumulator could overflow); trials draw those
    buffers over it in every kind (verify/trials/inputs.py). None: the buffer keeps its ``init``.
    ``pointwise_scale(inputs, problem, reference) -> {out name: P}``: magnitudes carried by
    a fixed number of roundings whatever the reduction length (epilogues, exp's argument),
    each counted once (None: no such term).
    ``stress(problem, buffer, context, previous) -> float64 array | None``: the buffer's
    stress-trial values (``previous``: the float64 values of the buffers drawn before it);
    None falls back to the generic in-domain row patterns (stress.GENERIC).
    ``derived_inputs``: input buffers whose contents the op makes for every trial instead of
    drawing them from a distribution (a sparse operand's metadata); ``derive(problem,
    buffer, rng, previous) -> float64 array`` gives one trial's values, in the buffer's
    storage dtype (``previous``: the float64 values of the buffers declared before it, so an
    input may be made from others: a sorted copy, a norm's statistics).
    ``derived_when(problem, name) -> bool``: the same for buffers the op makes only when the
    problem asks (cross entropy's labels with ``params.ignored_rows``); ``derives`` tells both.
    ``coverage(problem) -> [coverage.CoverageItem]``: the op's own coverage items beyond
    the per-buffer ones (structured rows, special and small outputs; dataset_spec/coverage.py).
    ``reduction_axis(problem, buffer) -> int``: the axis an input is reduced along (stress
    rows of integer operands lie along it; None: the last axis).
    ``exact(inputs, problem) -> {out: float64}``: the value before the conversion to an
    integer output (a float epilogue's input); with it, an integer output computed in float
    may differ by one where that value lies within its float bound of a rounding boundary
    (``integer_rounding_bound``).
    ``outputs(problem) -> tuple | None``: the out/inout buffers ``reference`` gives a value
    for (no function: the first out/inout buffer; a None result: unknown until it runs); ``checks.check_problem`` refuses, at build time, a
    problem that declares an output the op has no reference for.
    ``roundings(problem, name) -> int``: how many times a correct kernel of this op rounds a value
    to the dtype of output ``name`` (None: the main one) when the problem does not say
    (``params.output_roundings``); None: 1, the store. LLM libraries define gated
    activations and Llama's RMSNorm with a rounding to the storage dtype between steps.
    """
    name: str
    reference: Callable  # (inputs: dict[str, ndarray float64], problem) -> dict[str, ndarray]
    reduction_length: Callable  # (problem) -> int
    description: str = ""
    error_scale: Optional[Callable] = None
    input_range: Optional[Callable] = None
    scale_text: str = "|ref|"
    integer_range: Optional[Callable] = None
    pointwise_scale: Optional[Callable] = None
    stress: Optional[Callable] = None
    pointwise_text: str = "0"
    derived_inputs: tuple = ()
    derive: Optional[Callable] = None
    coverage: Optional[Callable] = None
    reduction_axis: Optional[Callable] = None
    exact: Optional[Callable] = None
    outputs: Optional[Callable] = None
    roundings: Optional[Callable] = None
    derived_when: Optional[Callable] = None
    # What the rest of ptxds knows about the op, stated here once:
    # ``sizes``: the kind of its sizes in a shape set (builders/shapes.KINDS, or "grouped");
    # ``canonical_rows``: (input names in order, params besides the size) when the op is a row
    # op whose rows from any source share one cross-source group (dataset_spec/canonical.py);
    # ``array_api``: reference and scales written with operators numpy and torch share, so the
    # verifier evaluates them on the GPU and draws the trials there (verify/trials);
    # ``device_stress``: its stress cases can be drawn on the device too;
    # ``exact_flops``: 2 x output elements x reduction length is every algorithm's multiply-add
    # count, so the roofline counts flops (dataset_spec/work.py).
    sizes: Optional[str] = None
    canonical_rows: Optional[tuple] = None
    array_api: bool = False
    device_stress: bool = False
    exact_flops: bool = False

    def derives(self, problem: Problem, name: str) -> bool:
        """Whether the op makes input ``name``'s values in every trial (``derive``)."""
        return name in self.derived_inputs or (self.derived_when is not None
                                               and bool(self.derived_when(problem, name)))

    def bound_terms(self, problem: Problem, dtype: str, name: Optional[str] = None) -> BoundTerms:
        p = problem.params
        return bound_terms(dtype, self.reduction_length(problem), str(p.get("accumulator") or ""),
                           math_input(problem, name), self.output_roundings(problem, name))

    def output_roundings(self, problem: Problem, name: Optional[str] = None) -> int:
        """The roundings to the dtype of output ``name`` (None: the main output) the bound
        allows: the problem's ``params.output_roundings`` (a count for every output, or
        {buffer: count}), else the op's default (``roundings``), else 1."""
        declared = problem.params.get("output_roundings")
        if isinstance(declared, dict):
            declared = declared.get(name) if name is not None else max(declared.values(), default=None)
        if declared is not None:
            return int(declared)
        return int(self.roundings(problem, name)) if self.roundings is not None else 1

    def produced_outputs(self, problem: Problem):
        """The out/inout buffers the reference fills (None when only running it can tell:
        a custom or muGraph reference)."""
        if self.outputs is not None:
            produced = self.outputs(problem)
            return None if produced is None else tuple(produced)
        outs = [b.name for b in problem.buffers if b.role in ("out", "inout")]
        return tuple(outs[:1])

    def tolerance(self, problem: Problem, dtype: str) -> Optional[tuple]:
        """(atol, rtol) when the problem overrides the bound with a fixed tolerance, else None."""
        override = problem.tolerance or {}
        if "atol" not in override and "rtol" not in override:
            return None
        return float(override.get("atol", 0.0)), float(override.get("rtol", 0.0))

    def scales(self, inputs: dict, problem: Problem, reference: dict) -> dict:
        """{out name: S} in float64, shaped like each output; ``|reference|`` when the op has
        no error scale (or its ``error_scale`` returns None)."""
        scale = self.error_scale(inputs, problem) if self.error_scale is not None else None
        if scale is None:
            return {k: np.abs(np.asarray(v, dtype=np.float64)) for k, v in reference.items()}
        return {k: np.abs(np.asarray(v, dtype=np.float64)).reshape(np.shape(reference[k]))
                for k, v in scale.items()}

    def pointwise_scales(self, inputs: dict, problem: Problem, reference: dict) -> dict:
        if self.pointwise_scale is None:
            return {}
        with np.errstate(invalid="ignore", over="ignore"):
            scale = self.pointwise_scale(inputs, problem, reference)
        return {k: np.abs(np.asarray(v, dtype=np.float64)).reshape(np.shape(reference[k]))
                for k, v in scale.items()}

    def bounds(self, inputs: dict, problem: Problem, reference: dict) -> dict:
        """{out name: per-element error bound} for one trial (float64 arrays)."""
        scales = pointwise = None
        out = {}
        for name, ref in reference.items():
            dtype = problem.buffer(name).dtype
            fixed = self.tolerance(problem, dtype)
            ref = np.asarray(ref, dtype=np.float64)
            if fixed is not None:
                out[name] = fixed[0] + fixed[1] * np.abs(np.where(np.isfinite(ref), ref, 0.0))
                continue
            if scales is None:
                with np.errstate(invalid="ignore", over="ignore"):
                    scales = self.scales(inputs, problem, reference)
                pointwise = self.pointwise_scales(inputs, problem, reference)
            if self.exact is not None and float_math(problem) and not is_float_dtype(dtype):
                out[name] = integer_rounding_bound(self.exact(inputs, problem)[name], ref, dtype,
                                                   float_terms(self.bound_terms(problem, "float32")),
                                                   scales[name], pointwise.get(name))
                continue
            out[name] = self.bound_terms(problem, dtype, name).bound(ref, scales[name], pointwise.get(name))
        return out

    def stress_values(self, problem: Problem, buffer, rng: np.random.Generator, domain: tuple,
                      previous: dict) -> np.ndarray:
        """A float input buffer's values for a stress trial (see dataset_spec/stress.py)."""
        from .. import stress
        mean, std = init_moments(buffer)
        context = stress.StressContext(rng, mean, std, domain[0], domain[1], buffer.dtype,
                                       float(problem.params.get("eps", 1e-5)))
        values = self.stress(problem, buffer, context, previous) if self.stress is not None else None
        specials = bool(problem.params.get("stress_specials"))
        if values is None:
            patterns = stress.GENERIC_SPECIALS if specials else stress.GENERIC
            values = stress.row_stress(patterns, buffer.shape, context, segments=True)
        values = np.asarray(values, dtype=np.float64).reshape(buffer.shape)
        if not (outputs_hold_specials(problem) or specials) and reads_buffer(problem, buffer.name):
            # an integer output cannot hold NaN or infinity, and how a kernel converts them
            # (cvt.rni.sat: NaN -> 0) is not the function: such problems get finite stress
            finite = np.isfinite(values)
            if not finite.all():
                values = np.where(finite, values, np.clip(rng.normal(mean, max(std, 1e-30), values.shape),
                                                          -domain[1], domain[1]))
        return values

    def domain(self, problem: Problem, buffer_name: str) -> tuple:
        """(lo, hi) magnitudes for a float input buffer under wide/edge/stress trials."""
        override = (problem.params.get("input_range") or {}).get(buffer_name)
        if override is not None:
            lo, hi = (float(v) for v in override)
        elif self.input_range is not None:
            lo, hi = self.input_range(problem, problem.buffer(buffer_name))
        else:
            lo, hi = DEFAULT_INPUT_RANGE
        fmt = FORMATS.get(problem.buffer(buffer_name).dtype)
        if fmt is not None:
            # half the range keeps sums of two in range; an FP8 operand gets the whole of
            # it: e4m3's top binade (256..448) shares its exponent with NaN, where a decoder
            # that treats exponent 1111 as IEEE's infinity or NaN goes wrong
            hi = min(hi, fmt.max_finite if problem.buffer(buffer_name).dtype.startswith("float8") else fmt.max_finite / 2)
            lo = max(lo, fmt.subnormal_min)
        if not 0 < lo <= hi:
            raise SpecError(f"problem {problem.problem_id}: input range of {buffer_name} is empty ({lo}, {hi})")
        return lo, hi


def math_input(problem: Problem, name: Optional[str] = None) -> str:
    """The precision output ``name``'s operands are rounded to before a product:
    ``params.math_input``, one for every output, or {buffer: precision} when only some
    outputs' terms pass through a narrower type (a norm backward's dW products of x * rstd
    rounded to bfloat16, beside a dx computed in float32); '' for none."""
    declared = problem.params.get("math_input")
    if isinstance(declared, dict):
        declared = declared.get(name) if name is not None else None
    return str(declared or "")


def nonnegative_inputs(problem: Problem) -> frozenset:
    """Inputs drawn as magnitudes on every trial (``params.nonnegative_inputs``): a function
    defined for one sign only (a running variance under a square root)."""
    return frozenset(problem.params.get("nonnegative_inputs") or ())


def outputs_hold_specials(problem: Problem) -> bool:
    """Whether every out/inout buffer is a float dtype (one that holds NaN and infinity):
    only then may stress inputs carry them (an integer output's conversion of NaN is not
    part of the function)."""
    return all(is_float_dtype(b.dtype) for b in problem.buffers if b.role in ("out", "inout"))


def reads_buffer(problem: Problem, name: str) -> bool:
    """False for C of an epilogue with beta = 0: BLAS and CUTLASS do not read C then (a
    NaN in C gives no NaN in D), so the reference never touches it."""
    return not (name == "C" and float(problem.params.get("beta") or 0.0) == 0.0)


def float_math(problem: Problem) -> bool:
    """Whether an integer output is converted from float arithmetic: a float operand, or an
    alpha or beta that float32 does not hold exactly (the epilogue's product then differs
    from the float64 one). Integer operands summed exactly, scaled by float32-exact
    alpha/beta, convert exactly: their outputs must match bit for bit."""
    if any(b.role in ("in", "inout") and is_float_dtype(b.dtype) and not b.table and b.name != "C"
           and b.name not in SCALE_NAMES for b in problem.buffers):
        return True
    p = problem.params
    return any(float(np.float32(float(p.get(k, d)))) != float(p.get(k, d)) for k, d in (("alpha", 1.0), ("beta", 0.0)))


SCALE_NAMES = ("SFA", "SFB", "S", "Z")  # per-block scales: float, but applied to an exact sum


def float_terms(terms: BoundTerms) -> BoundTerms:
    """``terms`` without the output's own rounding: the bound of the float value an
    integer output is converted from (the conversion is handled by the caller)."""
    return BoundTerms(0.0, terms.u_in, terms.u_acc, terms.n, 0.0, terms.tiny_acc, 0.0)


def integer_rounding_bound(exact, reference, dtype: str, terms: BoundTerms, scale, pointwise=None):
    """Per element, how far a correct integer output may lie from ``reference``: the
    kernel's float value lies within ``b`` (``terms`` on ``scale`` and ``pointwise``) of
    the exact one, and the conversion (round half to even, saturate) is monotone, so its
    output lies between the conversions of exact - b and exact + b. 0 where the exact
    value is farther than b from every rounding boundary; 1 next to one (a float32 sum at
    K = 4096 lands on the other side of .5 for a few elements in 65,536); NaN/inf
    references keep 0."""
    lowest, highest = integer_dtype_range(dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        b = terms.bound(np.zeros(np.shape(reference)), scale, pointwise)
        # the epilogue's conversion (gemm.saturate_to_output): round half to even, saturate
        low = np.clip(np.rint(exact - b), lowest, highest - 1)
        high = np.clip(np.rint(exact + b), lowest, highest - 1)
        below, above = abs(reference - low), abs(high - reference)
        out = (below + above + abs(below - above)) / 2  # max, for numpy and torch alike
    return np.where(np.isfinite(np.asarray(out, dtype=np.float64)), out, 0.0)


def init_moments(buffer) -> tuple:
    """(mean, std) of a float buffer's ``init`` distribution ((0, 1) when it has none)."""
    dist = buffer.init
    if dist is None:
        return 0.0, 1.0
    p = dist.params
    if dist.kind == "uniform":
        low, high = float(p.get("low", -1.0)), float(p.get("high", 1.0))
        return (low + high) / 2, (high - low) / math.sqrt(12)
    if dist.kind == "normal":
        return float(p.get("mean", 0.0)), float(p.get("std", 1.0))
    return 0.0, 1.0


# Ops that declare no domain (custom references) get 20 binades around 1.
DEFAULT_INPUT_RANGE = (2.0 ** -10, 2.0 ** 10)


def _fmt(dtype: str):
    return FORMATS.get(dtype, FORMATS["float32"])


def _out_dtype(problem: Problem) -> str:
    return problem.buffer(_out_name(problem)).dtype


def _inputs_of(problem: Problem, inputs: dict, *names: str) -> list:
    missing = [n for n in names if n not in inputs]
    if missing:
        raise SpecError(f"problem {problem.problem_id}: op {problem.op} needs buffers {missing}")
    return [inputs[n] for n in names]


def _out_name(problem: Problem) -> str:
    outs = [b.name for b in problem.buffers if b.role in ("out", "inout")]
    return outs[0]


def _main_out(problem: Problem, others: tuple = ()) -> str:
    """The first out/inout buffer not named in ``others`` (an op's secondary outputs such
    as a norm's ``rstd``), so the main output may be declared before or after them."""
    outs = [b.name for b in problem.buffers if b.role in ("out", "inout") and b.name not in others]
    if not outs:
        raise SpecError(f"problem {problem.problem_id}: op {problem.op} needs an out buffer besides "
                        f"{', '.join(others)}")
    return outs[0]


def _declared(problem: Problem, name: str) -> bool:
    """Whether the problem declares an out/inout buffer ``name``."""
    return any(b.name == name and b.role in ("out", "inout") for b in problem.buffers)


def narrow_output(problem: Problem, name: str) -> bool:
    """Whether output ``name`` is stored in a float dtype narrower than float32."""
    return problem.buffer(name).dtype in ("float16", "bfloat16") or problem.buffer(name).dtype.startswith("float8")


def _shaped(problem: Problem, name: str, array: np.ndarray) -> np.ndarray:
    return array.reshape(problem.buffer(name).shape)


def _last_dim(problem: Problem) -> int:
    return int(problem.buffer("x").shape[-1]) if any(b.name == "x" for b in problem.buffers) else 1


def is_tensor(x) -> bool:
    """Whether ``x`` is a torch tensor (torch need not be imported)."""
    return hasattr(x, "detach") and hasattr(x, "device")


def array_namespace(x):
    """numpy, or torch for a tensor: the module whose functions an op written for both
    (``OpSpec.array_api``) calls on ``x`` (the verifier prepares those ops' groups on the GPU,
    verify/trials/device_prepare.py)."""
    if is_tensor(x):
        import torch
        return torch
    return np


def as_float64(x):
    """``x`` as float64: a numpy array, or a torch tensor on its device."""
    return x.double() if is_tensor(x) else np.asarray(x, dtype=np.float64)


def filled_like(like, shape: tuple, value: float):
    """A float64 array of ``shape`` holding ``value``, of ``like``'s kind (numpy, or torch on
    ``like``'s device)."""
    xp = array_namespace(like)
    if xp is np:
        return np.full(shape, value, dtype=np.float64)
    return xp.full(tuple(shape), value, dtype=xp.float64, device=like.device)


def row_max(x):
    """The maximum along the last axis, kept as an axis of one (NaN where the row holds one,
    as numpy's max), of a numpy array or a torch tensor."""
    return x.amax(dim=-1, keepdim=True) if is_tensor(x) else x.max(axis=-1, keepdims=True)


def on_magnitudes(reference):
    """The error scale of a sum of products: the reference evaluated on |inputs|."""
    def scale(inputs, problem):
        return reference({name: np.abs(value) for name, value in inputs.items()}, problem)
    scale.__doc__ = f"{reference.__name__} of |inputs|"
    return scale


def stress_rows(patterns_name: str, buffers=("x",)):
    """Row patterns along the last axis for the named buffers (others: their init)."""
    def stress(problem, buffer, context, previous):
        from .. import stress as st
        if buffer.name not in buffers:
            return st.row_stress((st.p_normal,), buffer.shape, context)
        return st.row_stress(getattr(st, patterns_name), buffer.shape, context)
    return stress


def is_float_dtype(dtype: str) -> bool:
    return dtype in FORMATS


INT32_LIMIT = 2 ** 31  # the accumulator of integer products and sums


def range_int_products(length: Callable, *operands: str):
    """Full dtype range for the named operands of an n-term integer sum of products (n =
    ``length(problem)``, the op's reduction length), narrowed only where n max|a| max|b|
    could reach 2^31 (the int32 accumulator). An integer operand times a float one (a
    mixed-input GEMM converts the integer to the float type) keeps its full range: the
    float accumulator does not wrap. The operands of a problem with
    ``params.operand_density`` (unsigned_sums.py) keep their sparse ``init`` (None)."""
    def integer_range(problem, buffer):
        if buffer.name not in operands or problem.params.get("operand_density"):
            return None
        low, high = integer_dtype_range(buffer.dtype)
        if any(dtype_kind(problem.buffer(name).dtype) == "f" for name in operands):
            return low, high
        n = max(1, int(length(problem)))
        others = [max(abs(a), abs(b - 1)) for a, b in
                  (integer_dtype_range(problem.buffer(name).dtype) for name in operands if name != buffer.name)]
        other = max(others) if others else 1
        cap = max(1, (INT32_LIMIT - 1) // (n * max(1, other)))
        return max(low, -cap), min(high, cap + 1)
    return integer_range


def range_int_sum(length: Callable, operands: int = 1):
    """Addends whose n-term sum stays inside the output's integer range: n =
    ``length(problem)`` (the op's reduction length) times ``operands`` summed per term."""
    def integer_range(problem, buffer):
        out = problem.buffer(_out_name(problem)).dtype
        if dtype_kind(out) not in ("i", "u") or buffer.dtype in FORMATS:
            return None
        low, high = integer_dtype_range(buffer.dtype)
        out_low, out_high = integer_dtype_range(out)
        n = max(1, int(length(problem))) * operands
        return max(low, -(-out_low // n)), min(high, (out_high - 1) // n + 1)
    return integer_range


def range_products(length: Callable):
    """Operands of a float32 sum of n = ``length(problem)`` products: products neither
    overflow n-fold nor underflow the accumulator."""
    def input_range(problem, buffer):
        n = length(problem)
        f32 = FORMATS["float32"]
        return (max(_fmt(buffer.dtype).tiny, math.sqrt(f32.tiny)),
                math.sqrt(_fmt(_out_dtype(problem)).max_finite / (4 * n)))
    return input_range


def range_sum(problem, buffer):
    return _fmt(buffer.dtype).tiny, _fmt(_out_dtype(problem)).max_finite / (4 * _last_dim(problem))
