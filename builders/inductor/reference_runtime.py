"""The float64 reference and error scale of one Inductor kernel, shipped as text inside each
row's reference module (params.reference_source; docs/inductor.md).

A captured kernel's reference module holds ``graph(...)`` (the ATen ops Inductor fused into
that kernel, cut from the post-grad FX graph, every float made float64 and every device the
CPU), ``INPUTS``/``OUTPUTS`` (kernel buffer -> the value's size and strides in that buffer)
and then this file's text. It imports torch and numpy only.

``reference`` rebuilds each graph input from its buffer (``as_strided`` over the storage the
kernel reads), runs ``graph`` under ``Float64`` (every float dtype an op names becomes
float64, every device the CPU; the graph's text stays Inductor's) and writes each output
into its buffer's storage order. ``reference_error_scale`` runs the same graph under ``ErrorTracker``: a first-order
running error analysis in which every op carries E, a bound on the absolute error of its
float32 evaluation (inputs exact): E_out = sum |d out / d in| E_in + the op's own roundings
(one u = 2^-24 per arithmetic op, 4 u for a transcendental or approximate division, acc(n)
times the sum of |terms| for an n-term sum). The verifier's custom bound with
reduction_length 1 multiplies S by u_acc (float32), so S = E / u.
"""
import functools
import math

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.weak import WeakTensorKeyDictionary

U32 = 2.0 ** -24
FLOAT32_MAX = float(np.finfo(np.float32).max)
ROUNDOFF = {torch.float16: 2.0 ** -11, torch.bfloat16: 2.0 ** -8, torch.float32: 2.0 ** -24}
aten = torch.ops.aten
prims = torch.ops.prims


def _graph_inputs(inputs):
    values = []
    for buffer, (size, stride, dtype) in INPUTS.items():  # noqa: F821 (defined by the module)
        flat = torch.from_numpy(np.ascontiguousarray(inputs[buffer]).reshape(-1))
        flat = flat.to(torch.float64 if dtype == "float" else torch.int64 if dtype == "int" else torch.bool)
        values.append(torch.as_strided(flat, size, stride))
    return values


def _storage(value, size, stride, numel, base=None):
    """The buffer's storage after the kernel: ``value`` at its strided places; the other
    places keep ``base`` (an in-place buffer's input, which the kernel never touches there)."""
    flat = torch.zeros(numel, dtype=torch.float64)
    if base is not None:
        flat.copy_(torch.from_numpy(np.asarray(base, dtype=np.float64).reshape(-1)))
    torch.as_strided(flat, size, stride).copy_(value.to(torch.float64).expand(size))
    return flat.numpy()


def _outputs(values):
    values = values if isinstance(values, (tuple, list)) else (values,)
    return {buffer: (value, size, stride, numel)
            for (buffer, (size, stride, numel)), value in zip(OUTPUTS.items(), values)}  # noqa: F821


def reference(inputs, problem):
    values = _graph_inputs(inputs)
    with torch.no_grad(), Float64():
        outs = _outputs(graph(*values))  # noqa: F821
    return {b: _storage(v, s, st, n, inputs[b] if problem.buffer(b).role == "inout" else None)
            .reshape(problem.buffer(b).shape)
            for b, (v, s, st, n) in outs.items()}


def reference_error_scale(inputs, problem):
    values = _graph_inputs(inputs)
    tracker = ErrorTracker()
    with torch.no_grad(), tracker:
        outs = _outputs(graph(*values))  # noqa: F821
    errors = {b: tracker.error(v) for b, (v, s, st, n) in outs.items()}
    return {b: _storage(errors[b], s, st, n).reshape(problem.buffer(b).shape) / U32
            for b, (v, s, st, n) in outs.items()}


def accumulation(n):
    """acc(n) of dataset_spec.numerics: the smaller of gamma(n) and 2 sqrt(n) u."""
    n = max(1, int(n))
    worst = n * U32 / (1 - n * U32) if n * U32 < 0.5 else math.inf
    return min(worst, 2.0 * math.sqrt(n) * U32)


class NoErrorRule(RuntimeError):
    """An op of the graph has no rule in ErrorTracker."""


def _name(func):
    return func.__name__  # "view.default", "convert_element_type.default"


# ops that move, select or copy values: the error moves with them (call the op on E)
STRUCTURAL = {
    "view.default", "_unsafe_view.default", "reshape.default", "permute.default", "expand.default",
    "squeeze.dim", "squeeze.dims", "squeeze.default", "unsqueeze.default", "slice.Tensor", "select.int",
    "t.default", "transpose.int", "as_strided.default", "clone.default", "alias.default",
    "cat.default", "index.Tensor", "_unsafe_index.Tensor", "gather.default", "embedding.default",
    "constant_pad_nd.default", "where.self", "split.Tensor", "split_with_sizes.default",
    "unbind.int", "repeat.default", "copy.default", "flip.default", "roll.default", "lift_fresh_copy.default",
    "_to_copy.default", "contiguous.default", "view_as_real.default", "stack.default",
    "select_scatter.default", "slice_scatter.default", "index_select.default", "narrow.default",
    "unfold.default", "diagonal.default", "pixel_shuffle.default", "amax.default", "amin.default",
    "max.dim", "min.dim", "maximum.default", "minimum.default",
    "max.default", "min.default",
}
# the operand of a structural op that picks places (indices, a condition), not values
INDEX_OPERANDS = {"index.Tensor": 1, "_unsafe_index.Tensor": 1, "gather.default": 2, "index_select.default": 2,
                  "embedding.default": 1, "where.self": 0}
# ops whose error is at most their operand's: |f(x) - f(y)| <= |x - y|
CONTRACTING = {"neg.default", "abs.default", "relu.default", "clamp.default", "clamp_min.default",
               "clamp_max.default", "hardtanh.default"}
# ops whose result carries no error (exact values, booleans, integers)
EXACT = {
    "full.default", "arange.start", "arange.default", "arange.start_step", "iota.default", "scalar_tensor.default",
    "zeros.default", "ones.default", "empty.memory_format", "full_like.default", "zeros_like.default",
    "ones_like.default", "empty_like.default", "gt.Tensor", "gt.Scalar", "lt.Tensor", "lt.Scalar",
    "ge.Tensor", "ge.Scalar", "le.Tensor", "le.Scalar", "eq.Tensor", "eq.Scalar", "ne.Tensor", "ne.Scalar",
    "logical_not.default", "logical_and.default", "logical_or.default", "bitwise_and.Tensor",
    "bitwise_or.Tensor", "bitwise_not.default", "isnan.default", "isinf.default", "sign.default",
    "floor.default", "ceil.default", "round.default", "trunc.default", "argmax.default", "argmin.default",
    "sort.default", "topk.default",
}


FILLS = ("full.default", "full_like.default", "scalar_tensor.default")


def _constant_error(value: float) -> float:
    """The error of a constant held in float32: none when float32 holds it exactly (0.5, 1),
    else its rounding (an eps of 0.001 is 0.0010000000475 in float32; added to a variance of
    -0.0009765625 that is a relative error of 2e-6)."""
    if not math.isfinite(value) or float(np.float32(value)) == value:
        return 0.0
    return abs(value) * U32


def _widen(value):
    if isinstance(value, torch.dtype) and value.is_floating_point:
        return torch.float64
    if isinstance(value, torch.device):
        return torch.device("cpu")
    if isinstance(value, (list, tuple)):
        return type(value)(_widen(v) for v in value)
    return value


class Float64(TorchDispatchMode):
    """Runs every ATen op with its float dtypes float64 and its devices the CPU."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*_widen(tuple(args)), **{k: _widen(v) for k, v in (kwargs or {}).items()})


class ErrorTracker(Float64):
    """Runs ATen ops as Float64 does and keeps, per float result, the tensor E (see module)."""

    def __init__(self):
        super().__init__()
        self.errors = WeakTensorKeyDictionary()

    def error(self, value):
        if isinstance(value, float):  # a constant of the graph, which the kernel holds in float32
            return torch.tensor(_constant_error(value), dtype=torch.float64)
        if not isinstance(value, torch.Tensor) or not value.is_floating_point():
            return torch.zeros(value.shape if isinstance(value, torch.Tensor) else (), dtype=torch.float64)
        error = self.errors.get(value)
        return torch.zeros_like(value) if error is None else error

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = _name(func)
        if name == "convert_element_type.default":  # the rounding of the dtype the graph names
            self.cast_roundoff = ROUNDOFF.get(args[1], 0.0) if isinstance(args[1], torch.dtype) else 0.0
        if name == "_to_copy.default":
            self.copy_roundoff = ROUNDOFF.get((kwargs or {}).get("dtype"), 0.0)
        args, kwargs = _widen(tuple(args)), {k: _widen(v) for k, v in kwargs.items()}
        out = func(*args, **kwargs)
        if name in FILLS and out.is_floating_point():  # a float constant rounds to float32 as well
            self.errors[out] = torch.full(out.shape, _constant_error(float(args[1] if name != "scalar_tensor.default"
                                                                           else args[0])), dtype=torch.float64)
            return out
        if name in EXACT or not any(isinstance(v, torch.Tensor) and v.is_floating_point() for v in _tensors(out)):
            return out  # integers and booleans carry no rounding error
        errors = self._rule(func, name, args, kwargs, out)
        for value, error in zip(_tensors(out), _tensors(errors)):
            if isinstance(value, torch.Tensor) and value.is_floating_point():
                # E is never negative, so a NaN comes from 0 * inf: no error times an infinite
                # magnitude (a masked score of -inf); an infinite value is judged exactly anyway
                # and an infinite value (a mask's -inf) carries no error into the values after it
                error = torch.nan_to_num(error.to(torch.float64).expand(value.shape), nan=0.0, posinf=math.inf)
                self.errors[value] = torch.where(torch.isfinite(value), error, 0.0)
        return out

    def _value_error(self, operand):
        """What a structural op moves in place of ``operand``: its E; an integer or boolean
        value is exact (its E is 0, never the value itself: a mean's count 64 made float
        carries no error of 64)."""
        if not isinstance(operand, torch.Tensor):
            return operand
        return self.error(operand) if operand.is_floating_point() else torch.zeros(operand.shape, dtype=torch.float64)

    def _rule(self, func, name, args, kwargs, out):
        E = self.error
        a = args[0] if args else None
        b = args[1] if len(args) > 1 else None
        A = lambda t: t.abs() if isinstance(t, torch.Tensor) else abs(t)  # noqa: E731
        if name in STRUCTURAL:
            if name == "_to_copy.default" and not a.is_floating_point():  # an integer made float
                return _integer_conversion_error(out, self.copy_roundoff)
            kept = INDEX_OPERANDS.get(name)
            swapped = [x if i == kept else
                       [self._value_error(t) for t in x] if isinstance(x, (list, tuple)) else self._value_error(x)
                       for i, x in enumerate(args)]
            if name == "constant_pad_nd.default" and len(swapped) > 2:
                swapped[2] = 0.0
            if name.startswith(("max.", "min.", "amax.", "amin.")) or name in ("maximum.default", "minimum.default"):
                return _select_error(func, name, args, kwargs, self)
            return func(*swapped, **kwargs)
        if name in CONTRACTING:
            return E(a)
        if name == "index_put.default":  # a store: errors move with the values; an accumulating one adds
            accumulate = args[3] if len(args) > 3 else kwargs.get("accumulate", False)
            moved = func(E(a), args[1], E(args[2]).expand(args[2].shape), accumulate)
            return moved + U32 * A(out) if accumulate else moved
        if name == "max_pool2d_with_indices.default":  # a window's largest error bounds the one it picks
            return func(E(a), *args[1:], **kwargs)[0], None
        if name in ("clamp_min.Tensor", "clamp_max.Tensor", "clamp.Tensor"):  # one of the candidates
            bounds = [t for t in args[1:] if isinstance(t, torch.Tensor)]
            return functools.reduce(torch.maximum, [E(t).expand(out.shape) for t in bounds], E(a).expand(out.shape))
        if name in ("add.Tensor", "add.Scalar", "sub.Tensor", "sub.Scalar", "rsub.Scalar", "rsub.Tensor"):
            alpha = abs(kwargs.get("alpha", 1))
            return E(a) + alpha * E(b) + U32 * A(out)
        if name in ("mul.Tensor", "mul.Scalar"):  # with the second-order term: (x - mean)^2 at x == mean
            return A(b) * E(a) + A(a) * E(b) + E(a) * E(b) + U32 * A(out)
        if name in ("div.Tensor", "div.Scalar", "div.Tensor_mode"):
            bb = b if isinstance(b, torch.Tensor) else torch.tensor(float(b), dtype=torch.float64)
            first_order = E(a) / bb.abs() + A(out) / bb.abs() * E(b) + 4 * U32 * A(out)
            return _over_overflowed(E(b), first_order, A(out) + E(a) / bb.abs() + 4 * U32 * A(out))
        if name == "reciprocal.default":
            return _over_overflowed(E(a), E(a) / (a * a) + 4 * U32 * A(out), (1 + 4 * U32) * A(out))
        if name == "convert_element_type.default":
            if not out.is_floating_point():
                return torch.zeros_like(out, dtype=torch.float64)
            return E(a) + self.cast_roundoff * A(out)
        if name in ("exp.default", "exp2.default"):
            return _overflowing(out, A(out) * (E(a) * (math.log(2) if name == "exp2.default" else 1.0)
                                               + (A(a) + 4) * U32))
        if name == "expm1.default":
            return _overflowing(out, (A(out) + 1) * (E(a) + (A(a) + 4) * U32))
        if name in ("log.default", "log1p.default", "log2.default"):
            base = a + 1 if name == "log1p.default" else a
            return E(a) / A(base) + 4 * U32 * (A(out) + 1)
        if name == "sqrt.default":
            return 0.5 * E(a) / A(out) + 4 * U32 * A(out)
        if name == "rsqrt.default":
            return 0.5 * E(a) * A(out) / A(a) + 4 * U32 * A(out)
        if name == "tanh.default":
            return (1 - out * out) * E(a) + 4 * U32 * A(out) + 4 * U32 * A(a).clamp(max=1)
        if name == "sigmoid.default":
            return out * (1 - out) * E(a) + 4 * U32 * A(out)
        if name == "erf.default":
            return 2 / math.sqrt(math.pi) * torch.exp(-a * a) * E(a) + 4 * U32 * A(out)
        if name in ("sin.default", "cos.default"):
            return E(a) + 4 * U32 * (A(out) + A(a) * U32)
        if name in ("pow.Tensor_Scalar",):
            p = float(b)
            if p >= 1:  # |(a + e)^p - a^p| <= p (|a| + |e|)^(p-1) |e|, second order included
                return p * (A(a) + E(a)) ** (p - 1) * E(a) + 4 * U32 * A(out)
            return abs(p) * A(a) ** (p - 1) * E(a) + 4 * U32 * A(out) if p != 0 else torch.zeros_like(out)
        if name == "gelu.default":
            return E(a) * 1.2 + 4 * U32 * (A(out) + A(a))
        if name in ("silu.default",):
            return E(a) * 1.1 + 4 * U32 * (A(out) + A(a))
        if name in ("sum.dim_IntList", "sum.default", "mean.dim", "mean.default"):
            dims = _dims(a, args[1] if len(args) > 1 else None)
            n = _count(a, dims)
            keep = args[2] if len(args) > 2 else kwargs.get("keepdim", False)
            total = E(a).sum(dim=dims, keepdim=keep) + accumulation(n) * a.abs().sum(dim=dims, keepdim=keep)
            return total / n if name.startswith("mean") else total
        if name in ("var_mean.correction", "var.correction"):
            dims = _dims(a, args[1] if len(args) > 1 else kwargs.get("dim"))
            n = _count(a, dims)
            keep = kwargs.get("keepdim", False)
            mean = a.mean(dim=dims, keepdim=True)
            var_error = (2 * (a - mean).abs() * E(a)).sum(dim=dims, keepdim=keep) / max(1, n - 1) \
                + 4 * accumulation(n) * (a * a).mean(dim=dims, keepdim=keep)
            mean_error = E(a).mean(dim=dims, keepdim=keep) + accumulation(n) * a.abs().mean(dim=dims, keepdim=keep)
            return (var_error, mean_error) if name.startswith("var_mean") else var_error
        if name == "prepare_softmax_online.default":
            dim = args[1]
            peak = a.amax(dim=dim, keepdim=True)
            peak_error = _select(a, E(a), dim)
            terms = torch.exp(a - peak)
            n = a.shape[dim]
            carried = torch.where(terms > 0, terms * (E(a) + peak_error + (A(a - peak) + 4) * U32), 0.0)
            total = carried.sum(dim=dim, keepdim=True) \
                + accumulation(n) * terms.sum(dim=dim, keepdim=True)
            return peak_error, total
        if name in ("mm.default", "bmm.default"):
            return A(a) @ E(b) + E(a) @ A(b) + accumulation(a.shape[-1]) * (A(a) @ A(b))
        if name == "addmm.default":
            m1, m2 = args[1], args[2]
            return E(a) + A(m1) @ E(m2) + E(m1) @ A(m2) + accumulation(m1.shape[-1] + 1) * (A(a) + A(m1) @ A(m2))
        raise NoErrorRule(f"no error rule for aten {name}")


def _overflowing(out, error):
    """``error``, or no bound (inf) where the float32 value may lie beyond float32's range:
    there the kernel holds inf (exp(-x) of a SiLU at x < -88.7)."""
    return torch.where(out.abs() + error > FLOAT32_MAX, math.inf, error)


def _over_overflowed(divisor_error, error, overflowed_error):
    """A quotient's error where its divisor overflowed in float32 (its E is inf): the kernel
    divides by inf and gets 0, or by the divisor rounded once and gets the quotient, so
    its error is at most |quotient| and the numerator's share (``overflowed_error``);
    elsewhere the first-order ``error``. x / (1 + exp(-x)) at x = -100 is -0 in float32,
    -3.7e-42 in float64."""
    return torch.where(torch.isinf(divisor_error), overflowed_error, error)


def _integer_conversion_error(out, roundoff):
    """The error of integers converted to a float dtype of unit roundoff ``roundoff``: none up
    to 1 / roundoff (2^24 in float32, every integer there is exact), one rounding above."""
    if roundoff == 0.0:
        return torch.zeros_like(out, dtype=torch.float64)
    magnitude = out.abs().to(torch.float64)
    return torch.where(magnitude <= 1.0 / roundoff, 0.0, roundoff * magnitude)


def _select(values, errors, dim):
    """The error of a max/min along ``dim``: at most the largest error of the candidates."""
    return errors.amax(dim=dim, keepdim=True)


def _select_error(func, name, args, kwargs, tracker):
    a = args[0]
    if name in ("maximum.default", "minimum.default"):
        return torch.maximum(tracker.error(a), tracker.error(args[1]))
    if name in ("max.default", "min.default"):
        return tracker.error(a).amax()
    dims = args[1] if len(args) > 1 else kwargs.get("dim", [])
    keep = args[2] if len(args) > 2 else kwargs.get("keepdim", False)
    if name in ("max.dim", "min.dim"):
        return tracker.error(a).amax(dim=dims, keepdim=keep), None
    return tracker.error(a).amax(dim=dims if dims else None, keepdim=keep) if dims else tracker.error(a).amax()


def _dims(value, dims):
    if dims is None or dims == [] or dims == ():
        return list(range(value.dim()))
    return [dims] if isinstance(dims, int) else list(dims)


def _count(value, dims):
    return int(np.prod([value.shape[d] for d in dims])) if dims else 1


def _tensors(value):
    return list(value) if isinstance(value, (tuple, list)) else [value]
