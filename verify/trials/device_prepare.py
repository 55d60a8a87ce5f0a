"""A trial's inputs, float64 reference and error bounds made on the device (torch), for the
ops whose reference functions torch can evaluate.

Drawing tens of millions of inputs and evaluating their float64 reference, bounds and
agreement bounds on the host was the largest stage of verifying llm-size groups. Here the
inputs come from the counter-based generator of ``device_rng`` (the same distributions,
trial kinds and domains as ``inputs.draw``; another generator, so other values), and the
reference and bounds are the same float64 formulas evaluated by torch where the members are
judged. Stress trials get the op's own cases (dataset_spec/stress.py): the elementwise
ops' cases at the same positions, a GEMM's row patterns on the same rows along K, their
random parts drawn on the device. A trial this module cannot make (fp8 storage, integer
wide/edge/stress kinds, ops outside ``DEVICE_OPS``) returns None and the host path makes it. ``device`` may be the CPU, which
is how the tests compare this path with the host one.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Optional

import numpy as np

from dataset_spec.model import Problem
from dataset_spec.ops import ops_where
from dataset_spec.ops.spec import nonnegative_inputs
from dataset_spec.trials import DRAW, FLOAT_DISTRIBUTIONS, INTEGERS, STRESS, is_float, trial_spec

from . import device_rng
from .custom_reference import CUSTOM_OP
from .inputs import EDGE_FRACTION, MAGNITUDE, TrialInputs, _moments, edge_every_special, edge_values, trial_seed

# Ops whose reference, error scale and pointwise scale are written with operators numpy and
# torch share (reference.ARRAY_API_OPS)
DEVICE_OPS = frozenset(ops_where("array_api"))
# Ops whose stress cases are drawn on the device too (elementwise: one case per element;
# gemm: the row patterns of dataset_spec/stress.py along K)
DEVICE_STRESS_OPS = frozenset(ops_where("device_stress"))
_TORCH_STORAGE = {"float16": "float16", "bfloat16": "bfloat16", "float32": "float32", "float64": "float64",
                  "int8": "int8", "uint8": "uint8", "int16": "int16", "int32": "int32", "int64": "int64"}
_INT_LIMITS = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767),
               "int32": (-2 ** 31, 2 ** 31 - 1), "int64": (-2 ** 63, 2 ** 63 - 1)}
# Random streams of one buffer: each purpose its own, so values never share counters.
_S_MAIN, _S_SIGN, _S_REPLACE, _S_PICK, _S_WIDE, _S_WIDE_SIGN, _S_TINY = 0, 4, 6, 8, 10, 12, 14
_S_ORDER = 18  # the edge draw's placement of every special


def stratified_unit_on_device(seed: int, index: int, stream: int, n: int, device):
    """stress.stratified_unit on the device: one uniform value in each of n equal strata,
    the strata in a random order (argsort of stream ``stream + 1``), the offsets from ``stream``."""
    import torch
    order = torch.argsort(device_rng.uniform(seed, index, stream + 1, n, device))
    offsets = device_rng.uniform(seed, index, stream, n, device)
    return (order.to(torch.float64) + offsets) / max(n, 1)


def device_supported(problem: Problem) -> bool:
    """Whether this module can make ``problem``'s trials (some trials may still fall back).
    An integer output converted from float math is judged with the host's rounding
    allowance (ops.spec.integer_rounding_bound), so its problem stays on the host."""
    from dataset_spec.ops.spec import float_math, outputs_hold_specials
    if problem.op in DEVICE_OPS and not outputs_hold_specials(problem) and float_math(problem):
        return False
    return problem.op in DEVICE_OPS and all(b.dtype in _TORCH_STORAGE for b in problem.buffers
                                            if b.role in ("in", "inout", "out"))


def _plan_supported(problem: Problem, plan) -> bool:
    buf = problem.buffer(plan.name)
    if buf.dtype not in _TORCH_STORAGE or plan.how not in (DRAW, INTEGERS, STRESS):
        return False  # tables and op-derived inputs (sparse metadata) come from the host path
    if plan.how == INTEGERS:
        return plan.kind not in ("wide", "edge", "stress")
    if plan.how == STRESS:
        return problem.op in DEVICE_STRESS_OPS
    return buf.init is not None and buf.init.kind in ("normal", "uniform", "randint", "zeros", "ones", "arange",
                                                       "constant")


def device_makes(problem: Problem, trial: int) -> bool:
    """Whether ``make_trial_inputs_device`` can make ``trial`` (False: a buffer needs the
    host generator; the verifier then draws the whole trial on a host thread while the
    device makes the others). A user's function's trial (op custom) with a derived input or
    a stress row is the host's too: those come from the user's module and the host generator."""
    return all(_plan_supported(problem, plan) for plan in trial_spec(problem, trial).buffers)


def custom_on_device(problem: Problem) -> bool:
    """Whether a user's function's problem (op custom) can have its references, bounds and
    coverage made on the device: every buffer in a dtype torch stores (its plain draws are
    made there too, its derived inputs and stress rows on the host, ``device_makes``; the
    function runs on its GPU route, custom_reference.evaluate_tensors)."""
    return problem.op == CUSTOM_OP and all(b.dtype in _TORCH_STORAGE for b in problem.buffers
                                           if b.role in ("in", "inout", "out"))


def draw_on_device(dist, shape, seed: int, index: int, device, kind: str = "", dtype: str = "float32",
                   domain: Optional[tuple] = None):
    """inputs.draw on the device: float64 values of ``shape`` from ``dist`` under trial
    ``kind`` (swap, scale, wide, edge), drawn from Philox streams of (``seed``, ``index``)."""
    import torch
    shape = tuple(int(s) for s in shape)
    n = int(np.prod(shape, dtype=np.int64))
    p = dist.params
    base = dist.kind

    def u(stream):
        return device_rng.uniform(seed, index, stream, n, device)

    if kind == "wide" and base in FLOAT_DISTRIBUTIONS:
        lo, hi = domain
        strata = stratified_unit_on_device(seed, index, _S_MAIN, n, device)
        magnitude = torch.exp(math.log(lo) + (math.log(hi) - math.log(lo)) * strata)
        return torch.where(u(_S_SIGN) < 0.5, -magnitude, magnitude).reshape(shape)
    if kind == "edge" and base in FLOAT_DISTRIBUTIONS:
        mean, std = _moments(dist)
        values = torch.clamp(device_rng.normal(seed, index, _S_MAIN, n, device, mean, std), -domain[1], domain[1])
        specials = torch.from_numpy(edge_values(dtype, domain)).to(device)
        picks = specials[torch.clamp((u(_S_PICK) * specials.numel()).long(), max=specials.numel() - 1)]
        order = torch.argsort(u(_S_ORDER))
        picks, replace = edge_every_special(picks, u(_S_REPLACE) < EDGE_FRACTION, specials, order)
        return torch.where(replace, picks, values).reshape(shape)
    if kind and base in FLOAT_DISTRIBUTIONS:
        mean, std = _moments(dist)
        if kind in ("normal", "uniform") and kind != base:
            base = kind
            p = {"mean": mean, "std": std} if kind == "normal" else {
                "low": mean - std * math.sqrt(3), "high": mean + std * math.sqrt(3)}
    if base == "normal":
        out = device_rng.normal(seed, index, _S_MAIN, n, device, float(p.get("mean", 0.0)), float(p.get("std", 1.0)))
    elif base == "uniform":
        low, high = float(p.get("low", -1.0)), float(p.get("high", 1.0))
        out = low + (high - low) * u(_S_MAIN)
    elif base == "randint":
        out = device_rng.integers(seed, index, _S_MAIN, n, int(p.get("low", 0)), int(p.get("high", 2)), device)
    elif base in ("zeros", "ones", "constant"):
        value = {"zeros": 0.0, "ones": 1.0}.get(base, float(p.get("value", 0.0)))
        out = torch.full((n,), value, dtype=torch.float64, device=device)
    elif base == "arange":
        start, step = float(p.get("start", 0.0)), float(p.get("step", 1.0))
        out = start + step * torch.arange(n, dtype=torch.float64, device=device)
    else:
        raise ValueError(f"unknown distribution kind {base!r}")
    if kind in MAGNITUDE and dist.kind in FLOAT_DISTRIBUTIONS:
        out = out * MAGNITUDE[kind]
    return out.reshape(shape)


def to_storage_tensor(values, dtype: str):
    """inputs.float_to_bits on a float64 tensor: the storage tensor of ``dtype``
    (bfloat16 rounds through float32 as the host does; integers round half to even and
    saturate)."""
    import torch
    if dtype == "bfloat16":
        return _host_nans(values.to(torch.float32).to(torch.bfloat16), values, dtype)
    target = getattr(torch, _TORCH_STORAGE[dtype])
    if is_float(dtype):
        return _host_nans(values.to(target), values, dtype)
    low, high = _INT_LIMITS[dtype]
    return torch.clamp(torch.round(values), low, high).to(target)


# The NaN the host's conversion stores for a NaN without payload (numpy keeps its sign; the
# host's bfloat16 rounding stores 0x7FC0 for every NaN). torch's conversions differ by
# device (CUDA writes 0x7FFFFFFF), so NaNs are written explicitly.
_QUIET_NAN = {"float16": 0x7E00, "bfloat16": 0x7FC0, "float32": 0x7FC00000}
_SIGN_BIT = {2: -0x8000, 4: -0x80000000}


def _host_nans(storage, values, dtype: str):
    import torch
    if dtype not in _QUIET_NAN:
        return storage  # float64: stored as drawn
    nan = torch.isnan(values)
    if not bool(nan.any()):
        return storage
    width = storage.element_size()
    bits = storage.view({2: torch.int16, 4: torch.int32}[width])
    canonical = torch.full_like(bits, _QUIET_NAN[dtype])
    if dtype != "bfloat16":
        canonical = torch.where(torch.signbit(values), canonical | _SIGN_BIT[width], canonical)
    return torch.where(nan, canonical, bits).view(storage.dtype)


def make_trial_inputs_device(problem: Problem, group_id: str, trial: int, device,
                             salt: str = "") -> Optional[TrialInputs]:
    """make_trial_inputs on ``device`` (storage and float64 values as tensors), or None
    when a buffer of the trial needs the host generator."""
    import torch
    spec = trial_spec(problem, trial)
    if not all(_plan_supported(problem, plan) for plan in spec.buffers):
        return None
    seed = trial_seed(group_id, problem.digest(), trial, salt)
    magnitudes = nonnegative_inputs(problem)
    storage, values, ranges = {}, {}, {}
    for plan in spec.buffers:
        buf = problem.buffer(plan.name)
        if plan.how == INTEGERS:
            low, high = plan.integer_range
            drawn = device_rng.integers(seed, plan.index, _S_MAIN, buf.numel, low, high, device).reshape(buf.shape)
            ranges[buf.name] = [low, high - 1]
        elif plan.how == DRAW:
            drawn = draw_on_device(buf.init, buf.shape, seed, plan.index, device, plan.kind, buf.dtype, plan.domain)
            if plan.domain is not None:
                ranges[buf.name] = list(plan.domain)
        else:  # the op's stress cases or rows (DEVICE_STRESS_OPS)
            drawn = (gemm_stress_on_device(problem, buf, plan, seed, device) if problem.op == "gemm"
                     else elementwise_stress_on_device(problem, buf, plan, seed, device, values))
            ranges[buf.name] = list(plan.domain)
        if buf.name in magnitudes:
            drawn = torch.abs(drawn)
        bits = to_storage_tensor(drawn, buf.dtype)
        storage[buf.name] = bits
        values[buf.name] = bits.to(torch.float64)
    return TrialInputs(trial, seed, spec.kind, storage, values, ranges, generator=device_rng.GENERATOR)


def elementwise_stress_on_device(problem: Problem, buf, plan, seed: int, device, previous: dict):
    """The stress cases of vector_add and square (dataset_spec/stress.py's
    ``vector_add_stress``, ``square_stress``: element i takes case i % 9, resp. i % 8, the
    same cases at the same positions) with the random parts drawn on the device; None for
    other ops. ``previous``: the buffers drawn before
    (y's cases are built from x's rounded values)."""
    import torch
    from dataset_spec.numerics import FORMATS
    from dataset_spec.ops.spec import init_moments
    if problem.op not in DEVICE_STRESS_OPS:
        return None
    n, index = buf.numel, plan.index
    lo, hi = plan.domain
    mean, std = init_moments(buf)

    def u(stream):
        return device_rng.uniform(seed, index, stream, n, device)

    normal = device_rng.normal(seed, index, _S_MAIN, n, device, mean, max(std, 1e-30))
    magnitude = torch.exp(math.log(lo) + (math.log(hi) - math.log(lo)) * u(_S_WIDE))
    wide = torch.where(u(_S_WIDE_SIGN) < 0.5, -magnitude, magnitude)
    if problem.op == "square":
        cases = [normal, math.nan, math.inf, -math.inf, -0.0, hi, -lo, wide]
        return _by_case(torch, cases, n, device).reshape(buf.shape)
    tiny = (u(_S_TINY) * 8.0 - 4.0) * FORMATS.get(buf.dtype, FORMATS["float32"]).tiny
    sign = 1.0 - 2.0 * (u(_S_SIGN) < 0.5).to(torch.float64)  # -1 or 1 (where's scalar form is float32)
    if buf.name != "y" or "x" not in previous:
        cases = [normal, normal, math.inf, math.inf, math.nan, sign * hi, -0.0, tiny, wide]
    else:
        x = previous["x"].reshape(-1)
        cases = [-x, -x * (1.0 + sign * 2.0 ** -8), normal, -math.inf, normal,
                 hi * (2.0 * (x > 0).to(torch.float64) - 1.0), -0.0, tiny, wide]
    out = _by_case(torch, cases, n, device)
    finite = torch.isfinite(out)  # stress.clip_finite: deliberate NaN and infinities stay
    return torch.where(finite, torch.clamp(out, -hi, hi), out).reshape(buf.shape)


class _DeviceDraws:
    """Successive draws of one buffer's stress rows, each from its own Philox streams."""

    def __init__(self, seed: int, index: int, device, first_stream: int = 32):
        self.seed, self.index, self.device, self.stream = seed, index, device, first_stream

    def uniform(self, shape, low: float = 0.0, high: float = 1.0):
        n = int(np.prod(shape, dtype=np.int64))
        u = device_rng.uniform(self.seed, self.index, self.stream, n, self.device)
        self.stream += 2
        return (low + (high - low) * u).reshape(shape)

    def normal(self, shape, mean: float, std: float):
        n = int(np.prod(shape, dtype=np.int64))
        z = device_rng.normal(self.seed, self.index, self.stream, n, self.device, mean, std)
        self.stream += 2
        return z.reshape(shape)

    def integers(self, low: int, high: int, count: int):
        n = device_rng.integers(self.seed, self.index, self.stream, count, low, high, self.device)
        self.stream += 2
        return n.long()


def _row_patterns(torch, draws: _DeviceDraws, mean: float, std: float, lo: float, hi: float) -> dict:
    """dataset_spec/stress.py's GEMM row patterns (p_tail_heavy, p_constant, p_wide,
    p_nan_one, p_half_zeros, p_normal, p_alternating, p_inf_one) as functions of (m, n)."""
    std = max(std, 1e-30)

    def normal(m, n):
        return draws.normal((m, n), mean, std)

    def tail_heavy(m, n):
        ramp = 2.0 ** (4.0 * torch.arange(n, dtype=torch.float64, device=draws.device) / max(1, n))
        ramp[-8:] *= 4.0
        return normal(m, n) * ramp

    def constant(m, n):  # stress.short_mantissa: 3 significant bits
        mantissa, exponent = torch.frexp(draws.normal((m, 1), mean, std))
        # 2^e in float64 (torch.ldexp's power is float32, which a large exponent overflows)
        return (torch.round(mantissa * 8.0) / 8.0 * torch.pow(2.0, exponent.to(torch.float64))).expand(m, n)

    def wide(m, n):  # stress.log_uniform: stratified
        strata = stratified_unit_on_device(draws.seed, draws.index, draws.stream, m * n, draws.device)
        draws.stream += 2
        magnitude = torch.exp(math.log(lo) + (math.log(hi) - math.log(lo)) * strata.reshape(m, n))
        return torch.where(draws.uniform((m, n)) < 0.5, -magnitude, magnitude)

    def zero(m, n):
        return torch.zeros((m, n), dtype=torch.float64, device=draws.device)

    def lo_one_hot(m, n):  # stress.p_lo_one_hot
        x = zero(m, n)
        sign = 1.0 - 2.0 * (draws.uniform((m,)) < 0.5).to(torch.float64)
        x[torch.arange(m, device=draws.device), draws.integers(0, n, m)] = sign * lo * (1.0 + draws.uniform((m,)))
        return x

    def one_special(value):
        def pattern(m, n):
            x = normal(m, n)
            x[torch.arange(m, device=draws.device), draws.integers(0, n, m)] = value
            return x
        return pattern

    def half_zeros(m, n):
        x = normal(m, n)
        return torch.where(draws.uniform((m, n)) < 0.5, torch.zeros((), dtype=torch.float64, device=x.device), x)

    def alternating(m, n):
        v = torch.abs(draws.normal((m, (n + 1) // 2), mean, std)) + abs(std) * 0.1
        signs = 1.0 - 2.0 * (torch.arange(n, device=draws.device) % 2).to(torch.float64)
        return torch.repeat_interleave(v, 2, dim=1)[:, :n] * signs

    return {"tail_heavy": tail_heavy, "constant": constant, "wide": wide, "nan_one": one_special(math.nan),
            "inf_one": one_special(math.inf), "half_zeros": half_zeros, "normal": normal,
            "alternating": alternating, "zero": zero, "lo_one_hot": lo_one_hot}


GEMM_A_ROWS = ("tail_heavy", "constant", "wide", "nan_one", "half_zeros", "normal", "zero",
               "lo_one_hot")                                                                   # stress.GEMM_A
GEMM_B_ROWS = ("tail_heavy", "alternating", "wide", "inf_one", "normal", "zero")             # stress.GEMM_B
FINITE_B_ROWS = ("tail_heavy", "alternating", "wide", "normal", "zero")  # stress.GEMM_B_FINITE: finite_operands


def gemm_stress_on_device(problem: Problem, buf, plan, seed: int, device):
    """stress_gemm on the device: A's rows and B's columns along K take the row patterns
    r % P of stress.GEMM_A / GEMM_B with one K index zeroed (stress.zero_slice), finite
    values clipped to the domain; C normal rows, or NaN and infinities when beta = 0."""
    import torch
    from dataset_spec import stress
    from dataset_spec.ops.spec import init_moments, reads_buffer
    p = problem.params
    if buf.name == "C" and not reads_buffer(problem, "C"):
        return torch.from_numpy(stress.nonfinite_fill(buf.shape)).to(device)
    if buf.name == "A":
        names, axis = GEMM_A_ROWS, (-1 if p.get("layout_a", "row") == "row" else 0)
    elif buf.name == "B":
        names = FINITE_B_ROWS if p.get("finite_operands") else GEMM_B_ROWS
        axis = 0 if p.get("layout_b", "row") == "row" else -1
    else:
        names, axis = ("normal",), -1
    mean, std = init_moments(buf)
    lo, hi = plan.domain
    patterns = _row_patterns(torch, _DeviceDraws(seed, plan.index, device), mean, std, lo, hi)
    shape = tuple(int(s) for s in buf.shape)
    moved = list(shape)
    length = moved.pop(axis)
    rows = int(np.prod(moved, dtype=np.int64))
    out = torch.empty((rows, length), dtype=torch.float64, device=device)
    for index, name in enumerate(names):  # stress.rows_by_pattern
        count = len(range(index, rows, len(names)))
        if count:
            out[index::len(names)] = patterns[name](count, length)
    if buf.name in ("A", "B") and length > 2:  # stress.zero_slice at stress.k_slice
        choice = stress.free_index(torch.isfinite(out).all(dim=0).tolist(), stress.k_slice(length, buf.name))
        if choice is not None:
            out[:, choice] = 0.0
    values = torch.movedim(out.reshape(tuple(moved) + (length,)), -1, axis)
    finite = torch.isfinite(values)  # stress.clip_finite
    return torch.where(finite, torch.clamp(values, -hi, hi), values).contiguous()


def _by_case(torch, cases: list, n: int, device):
    """Element i from ``cases[i % len(cases)]`` (each a length-n tensor or one number)."""
    out = torch.empty(n, dtype=torch.float64, device=device)
    for k, case in enumerate(cases):
        out[k::len(cases)] = case[k::len(cases)] if hasattr(case, "detach") else case
    return out


# --- reference and bounds on the device -------------------------------------------------

def _abs_finite_or_zero(torch, ref):
    return torch.abs(torch.where(torch.isfinite(ref), ref, torch.zeros((), dtype=ref.dtype, device=ref.device)))


def _as_tensor(torch, value, like):
    """An op's scale (tensor, numpy array or broadcast zeros) as a float64 tensor on ``like``'s device."""
    if hasattr(value, "detach"):
        return value.to(dtype=torch.float64)
    array = np.asarray(value, dtype=np.float64)
    if array.size and all(stride == 0 for stride in array.strides):
        return torch.tensor(float(array.reshape(-1)[0]), dtype=torch.float64, device=like.device)
    return torch.from_numpy(np.ascontiguousarray(array)).to(like.device)


def _shaped_like(tensor, reference):
    """``tensor`` reshaped like ``reference``; a 0-d tensor (one broadcast value) stays 0-d."""
    return tensor.reshape(reference.shape) if tensor.dim() else tensor


def bound_tensor(terms, reference, scale, pointwise=None):
    """numerics.BoundTerms.bound in torch: the same float64 terms added in the same order."""
    import torch
    out = terms.u_out * torch.abs(reference) + terms.scale_coefficient * torch.abs(scale) + terms.floor
    if pointwise is not None:
        out = out + terms.pointwise_coefficient * torch.abs(pointwise)
    inf = torch.full((), math.inf, dtype=torch.float64, device=reference.device)
    zero = torch.zeros((), dtype=torch.float64, device=reference.device)
    return torch.where(torch.isfinite(reference), torch.where(torch.isfinite(out), out, inf), zero)


def bounds_on_device(op, values: dict, problem: Problem, reference: dict) -> dict:
    """OpSpec.bounds for tensors: {out name: per-element float64 bound tensor}."""
    import torch
    out, scales, pointwise = {}, None, None
    for name, ref in reference.items():
        dtype = problem.buffer(name).dtype
        fixed = op.tolerance(problem, dtype)
        if fixed is not None:
            out[name] = fixed[0] + fixed[1] * _abs_finite_or_zero(torch, ref)
            continue
        if scales is None:
            raw = op.error_scale(values, problem) if op.error_scale is not None else None
            scales = ({k: torch.abs(v) for k, v in reference.items()} if raw is None else
                      {k: _shaped_like(torch.abs(_as_tensor(torch, v, ref)), reference[k]) for k, v in raw.items()})
            raw_pointwise = op.pointwise_scale(values, problem, reference) if op.pointwise_scale is not None else {}
            pointwise = {k: _shaped_like(torch.abs(_as_tensor(torch, v, ref)), reference[k])
                         for k, v in raw_pointwise.items()}
        point = pointwise.get(name)
        out[name] = bound_tensor(op.bound_terms(problem, dtype, name), ref, scales[name], point)
    return out


def trivial_reason_tensor(ref, bound) -> str:
    """compare.trivial_reason on tensors."""
    import torch
    bound = torch.broadcast_to(bound, ref.shape)
    finite = torch.isfinite(ref)
    if not bool(finite.any()):
        return "the reference has no finite element"
    if not bool(finite.all()):
        return ""
    values, limits = ref[finite], bound[finite]
    magnitudes = torch.abs(values)
    if bool(torch.all(magnitudes <= limits)):
        return f"every |reference| element is within its error bound (max |ref| {float(magnitudes.max()):.3g})"
    if values.numel() > 1:
        spread = float(values.max() - values.min())
        smallest = float(limits.min())
        if spread <= 2 * smallest:
            return (f"the reference is near-constant (spread {spread:.3g} over {values.numel()} elements, "
                    f"smallest bound {smallest:.3g})")
    return ""


def agreement_bound_tensor(ref, bound, terms):
    """compare.agreement_bound on tensors."""
    import torch
    if terms is None or terms.u_out == 0.0:
        return bound
    magnitude = torch.abs(ref)
    ulp = 2.0 * terms.u_out * torch.clamp(magnitude, min=terms.tiny_out)
    return bound - terms.u_out * magnitude + ulp


def smallest_caught_tensor(ref, bound) -> float:
    """numerics.smallest_caught_relative_error on tensors."""
    import torch
    magnitude = torch.abs(ref)
    bound = torch.broadcast_to(bound, ref.shape)
    mask = (magnitude > 0) & torch.isfinite(magnitude) & torch.isfinite(bound)
    if not bool(mask.any()):
        return float("inf")
    return float(torch.min(bound[mask] / magnitude[mask]))


def trial_reference_on_device(op, problem: Problem, trial: TrialInputs, specs: list, terms: dict) -> tuple:
    """runner._trial_reference for a trial whose values are tensors: (reference per output,
    per output (bound, agreement bound, trivial reason, smallest caught relative error or
    None), refusal or '')."""
    import torch
    try:
        ref = op.reference(dict(trial.values), problem)
        shaped = {}
        for spec in specs:
            if spec.name not in ref:
                return {}, {}, f"reference returned no value for output {spec.name}"
            shaped[spec.name] = ref[spec.name].to(torch.float64).reshape(problem.buffer(spec.name).shape)
        bounds = bounds_on_device(op, dict(trial.values), problem, shaped)
    except Exception as exc:
        if out_of_memory(exc):
            raise  # the GPU's limit, not the function's: the runner prepares the group on the host
        return {}, {}, f"reference failed: {type(exc).__name__}: {exc}"
    per_spec = {}
    for spec in specs:
        bound = torch.broadcast_to(bounds[spec.name], shaped[spec.name].shape)
        reason = trivial_reason_tensor(shaped[spec.name], bound)
        caught = (smallest_caught_tensor(shaped[spec.name], bound)
                  if trial.kind in ("normal", "uniform") and not reason else None)
        per_spec[spec.name] = (bound, agreement_bound_tensor(shaped[spec.name], bound, terms[spec.name]), reason, caught)
    return shaped, per_spec, ""


def out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` is torch's out-of-memory on a device (torch need not be imported)."""
    return type(exc).__name__ == "OutOfMemoryError" and type(exc).__module__.startswith("torch")


def trial_on(trial: TrialInputs, device) -> TrialInputs:
    """``trial`` with its float64 values as tensors on ``device`` (a host-made trial is
    uploaded; its storage stays where it is)."""
    import torch
    values = {name: value.to(device) if hasattr(value, "detach")
              else torch.from_numpy(np.ascontiguousarray(value, dtype=np.float64)).to(device)
              for name, value in trial.values.items()}
    return dataclasses.replace(trial, values=values)
