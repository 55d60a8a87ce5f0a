"""Implicit-GEMM convolutions, channels-last: fprop, dgrad and wgrad in 2-D (NHWC) and 3-D
(NDHWC), with stride, padding, dilation and groups, and an alpha/beta epilogue.

Tensors (CUTLASS's conventions; cross-correlation, as ``Conv2dProblemSize`` defaults to):
activations ``x`` (N, [D,] H, W, C), filters ``w`` (K, [T,] R, S, C / groups), outputs
``y`` (N, [Z,] P, Q, K) with P = (H + 2 pad - dil (R - 1) - 1) // stride + 1.

- ``conv2d_fprop`` / ``conv3d_fprop``: y = alpha conv(x, w) + beta C (C shaped like y)
- ``conv2d_dgrad`` / ``conv3d_dgrad``: dx = alpha conv_transpose(dy, w) + beta C
- ``conv2d_wgrad`` / ``conv3d_wgrad``: dw = alpha sum_{n, p, q} dy (x) window + beta C

``problem.params``: ``stride``, ``padding``, ``dilation`` (one int per spatial dim),
``groups``, ``alpha``, ``beta``, ``accumulator``, ``math_input``; ``layout`` (default
``nhwc``; ``nc32hw32`` / ``nc64hw64``: CUTLASS's interleaved storage) and ``complex``
(complex<float> elements, a last axis of 2) state how the buffers hold the logical
tensors (conv_layouts.py); ``operand_density`` (unsigned saturating convs) draws both
operands sparse from their ``init`` (unsigned_sums.py). Buffers are named by their role (x, w, y / dy, w, dx / dy, x,
dw; C when beta != 0); each op reads the shapes from its buffers. The float64 reference loops over the filter taps (R S, or T R S,
of them) and does one matrix product per tap, so it stays fast at ResNet sizes.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from ..model import Problem, SpecError
from ..numerics import FORMATS
from .conv_layouts import from_interleaved, interleaved_shape, logical_shape, to_interleaved
from .gemm import gemm_epilogue_roundings, saturate_to_output
from .spec import OpSpec, _fmt, _inputs_of, _out_name, range_int_products

# (input names, output name) per conv kind
OPERANDS = {"fprop": (("x", "w"), "y"), "dgrad": (("dy", "w"), "dx"), "wgrad": (("dy", "x"), "dw")}
FILTERS = ("w", "dw")
OPERAND_NAMES = ("x", "dx", "w", "dw", "y", "dy", "C")


def storage_layout(problem: Problem) -> str:
    return str(problem.params.get("layout") or "nhwc")


def is_complex(problem: Problem) -> bool:
    return bool(problem.params.get("complex"))


def tensor_shape(problem: Problem, name: str) -> tuple:
    """The logical (channels-last, per-element) shape of buffer ``name``."""
    shape = tuple(problem.buffer(name).shape)
    if is_complex(problem):
        shape = shape[:-1]
    return logical_shape(shape, storage_layout(problem), name in FILTERS)


def load_tensor(problem: Problem, values, name: str) -> np.ndarray:
    """Buffer ``name``'s values as the logical channels-last array (complex128 for complex)."""
    storage = np.asarray(values).reshape(problem.buffer(name).shape)
    if is_complex(problem):
        storage = storage[..., 0] + 1j * storage[..., 1]
    return from_interleaved(storage, storage_layout(problem), name in FILTERS)


def store_tensor(problem: Problem, name: str, logical: np.ndarray) -> np.ndarray:
    """A logical array in buffer ``name``'s storage (the inverse of ``load_tensor``)."""
    storage = to_interleaved(logical, storage_layout(problem), name in FILTERS)
    if is_complex(problem):
        storage = np.stack([storage.real, storage.imag], axis=-1)
    return storage


def conv_output_extent(extent: int, filt: int, stride: int, pad: int, dilation: int) -> int:
    """P from H (one spatial dim): the positions a dilated filter fits in the padded input."""
    return (extent + 2 * pad - dilation * (filt - 1) - 1) // stride + 1


def _per_dim(problem: Problem, key: str, default: int, rank: int) -> tuple:
    value = problem.params.get(key, default)
    values = tuple(int(v) for v in value) if isinstance(value, (list, tuple)) else (int(value),) * rank
    if len(values) != rank:
        raise SpecError(f"problem {problem.problem_id}: params.{key} needs {rank} values, got {list(values)}")
    return values


@dataclass(frozen=True)
class ConvGeometry:
    """Sizes of one convolution: batch, spatial extents in and out, channels, filter taps,
    stride, padding, dilation, groups."""
    n: int
    spatial: tuple
    c: int
    k: int
    taps: tuple
    out_spatial: tuple
    stride: tuple
    padding: tuple
    dilation: tuple
    groups: int

    @property
    def rank(self) -> int:
        return len(self.spatial)


def geometry(problem: Problem) -> ConvGeometry:
    """The conv's sizes from its buffers' shapes and params (the filter is ``w``, or ``dw``)."""
    kind = conv_kind(problem)
    names = {b.name: tensor_shape(problem, b.name) for b in problem.buffers if b.name in OPERAND_NAMES}
    act = names.get("x") or names.get("dx")
    out = names.get("y") or names.get("dy")
    filt = names.get("w") or names.get("dw")
    if act is None or out is None or filt is None:
        raise SpecError(f"problem {problem.problem_id}: a {kind} conv needs activation, filter and output buffers, "
                        f"got {sorted(names)}")
    rank = len(act) - 2
    groups = int(problem.params.get("groups", 1))
    stride = _per_dim(problem, "stride", 1, rank)
    padding = _per_dim(problem, "padding", 0, rank)
    dilation = _per_dim(problem, "dilation", 1, rank)
    n, c, k = act[0], act[-1], filt[0]
    taps = filt[1:-1]
    expect = tuple(conv_output_extent(h, r, s, p, d) for h, r, s, p, d in zip(act[1:-1], taps, stride, padding, dilation))
    if out[1:-1] != expect or out[0] != n or out[-1] != k or filt[-1] * groups != c or k % groups:
        raise SpecError(f"problem {problem.problem_id}: conv shapes disagree: activation {act}, filter {filt}, "
                        f"output {out} with stride {stride}, padding {padding}, dilation {dilation}, groups {groups} "
                        f"(output spatial should be {expect})")
    return ConvGeometry(n, tuple(act[1:-1]), c, k, tuple(taps), tuple(out[1:-1]), stride, padding, dilation, groups)


def _tap_window(g: ConvGeometry, tap) -> tuple:
    """Slices of the zero-padded activation that tap ``tap`` reads for every output position."""
    return tuple(slice(t * d, t * d + s * (p - 1) + 1, s)
                 for t, d, s, p in zip(tap, g.dilation, g.stride, g.out_spatial))


def _padded(g: ConvGeometry, x: np.ndarray) -> np.ndarray:
    return np.pad(x, ((0, 0),) + tuple((p, p) for p in g.padding) + ((0, 0),))


def _unpad(g: ConvGeometry, x: np.ndarray) -> np.ndarray:
    return x[(slice(None),) + tuple(slice(p, p + h) for p, h in zip(g.padding, g.spatial)) + (slice(None),)]


# Bytes of one im2col block: taps are gathered in chunks of at most this size, so each
# chunk is one contiguous BLAS product (a strided window in a matmul is slow, and a 7x7
# stem's full im2col at batch 8 is 300 MB).
IM2COL_BYTES = 64 << 20


def _tap_chunks(g: ConvGeometry, columns: int):
    """The filter taps in chunks whose im2col block (rows x taps x columns) fits IM2COL_BYTES."""
    taps = list(itertools.product(*(range(t) for t in g.taps)))
    rows = g.n * math.prod(g.out_spatial)
    per_chunk = max(1, IM2COL_BYTES // max(1, 8 * rows * columns))
    return [taps[i:i + per_chunk] for i in range(0, len(taps), per_chunk)]


def _im2col(g: ConvGeometry, xp: np.ndarray, taps: list, channels: slice) -> np.ndarray:
    """(output positions, len(taps) * channels): the padded activation each tap reads."""
    rows = g.n * math.prod(g.out_spatial)
    return np.stack([xp[(slice(None),) + _tap_window(g, tap) + (channels,)].reshape(rows, -1) for tap in taps],
                    axis=1).reshape(rows, -1)


def _filter_taps(w: np.ndarray, taps: list, filters: slice) -> np.ndarray:
    """(filters, len(taps) * channels): the filter's weights for ``taps``, im2col order."""
    return np.stack([w[(filters,) + tap] for tap in taps], axis=1).reshape(w[filters].shape[0], -1)


def conv_fprop(x, w, g: ConvGeometry):
    """y[n, o, k] = sum_{tap, c} x_pad[n, o * stride + tap * dil, g c] w[k, tap, c] (float64)."""
    xp = _padded(g, x)
    cg, kg = g.c // g.groups, g.k // g.groups
    y = np.zeros((g.n * math.prod(g.out_spatial), g.k), dtype=np.result_type(x, w, np.float64))
    for taps in _tap_chunks(g, cg):
        for grp in range(g.groups):
            cols = _im2col(g, xp, taps, slice(grp * cg, (grp + 1) * cg))
            y[:, grp * kg:(grp + 1) * kg] += cols @ _filter_taps(w, taps, slice(grp * kg, (grp + 1) * kg)).T
    return y.reshape((g.n,) + g.out_spatial + (g.k,))


def conv_dgrad(dy, w, g: ConvGeometry):
    """dx = the adjoint of fprop in x: every output gradient scattered back through each tap."""
    dxp = np.zeros((g.n,) + tuple(h + 2 * p for h, p in zip(g.spatial, g.padding)) + (g.c,),
                   dtype=np.result_type(dy, w, np.float64))
    cg, kg = g.c // g.groups, g.k // g.groups
    for tap in itertools.product(*(range(t) for t in g.taps)):
        index = (slice(None),) + _tap_window(g, tap)
        for grp in range(g.groups):
            dxp[index + (slice(grp * cg, (grp + 1) * cg),)] += (
                dy[..., grp * kg:(grp + 1) * kg] @ w[(slice(grp * kg, (grp + 1) * kg),) + tap])
    return _unpad(g, dxp)


def conv_wgrad(dy, x, g: ConvGeometry):
    """dw[k, tap, c] = sum_{n, o} dy[n, o, k] x_pad[n, o * stride + tap * dil, g c]."""
    xp = _padded(g, x)
    cg, kg = g.c // g.groups, g.k // g.groups
    dw = np.zeros((g.k,) + g.taps + (cg,), dtype=np.result_type(dy, x, np.float64))
    grads = dy.reshape(-1, g.k)
    for taps in _tap_chunks(g, cg):
        for grp in range(g.groups):
            cols = _im2col(g, xp, taps, slice(grp * cg, (grp + 1) * cg))
            block = (grads[:, grp * kg:(grp + 1) * kg].T @ cols).reshape(kg, len(taps), cg)
            for i, tap in enumerate(taps):
                dw[(slice(grp * kg, (grp + 1) * kg),) + tap] = block[:, i]
    return dw


CONV = {"fprop": conv_fprop, "dgrad": conv_dgrad, "wgrad": conv_wgrad}


def conv_kind(problem: Problem) -> str:
    return problem.op.split("_", 1)[1]


def conv_exact(inputs, problem, alpha=None, beta=None):
    """alpha conv + beta C in float64 (complex128 for complex convs), in the output's
    storage, before any conversion to the output dtype."""
    kind = conv_kind(problem)
    (first, second), out = OPERANDS[kind]
    a, b = _inputs_of(problem, inputs, first, second)
    g = geometry(problem)
    a, b = load_tensor(problem, a, first), load_tensor(problem, b, second)
    p = problem.params
    alpha = float(p.get("alpha", 1.0)) if alpha is None else alpha
    beta = float(p.get("beta", 0.0)) if beta is None else beta
    value = alpha * CONV[kind](a, b, g)
    if beta != 0.0:
        c_name = "C" if "C" in inputs else out
        value = value + beta * load_tensor(problem, inputs[c_name], c_name)
    return {out: store_tensor(problem, out, value)}


def ref_conv(inputs, problem):
    """The conv kind's float64 value, stored as the epilogue converts to the output dtype."""
    out = _out_name(problem)
    return {out: saturate_to_output(conv_exact(inputs, problem)[out], problem.buffer(out).dtype)}


def scale_conv(inputs, problem):
    """The same conv on |inputs| with |alpha| and |beta|: the sum of |terms| per output.
    Complex: per part, the magnitudes of the real products that make it (as complex_gemm:
    re = sum ar br - ai bi, im = sum ar bi + ai br)."""
    p = problem.params
    alpha, beta = abs(float(p.get("alpha", 1.0))), abs(float(p.get("beta", 0.0)))
    if not is_complex(problem):
        return conv_exact({k: np.abs(v) for k, v in inputs.items()}, problem, alpha, beta)
    kind = conv_kind(problem)
    (first, second), out = OPERANDS[kind]
    g = geometry(problem)
    a, b = (load_tensor(problem, inputs[name], name) for name in (first, second))
    ar, ai, br, bi = np.abs(a.real), np.abs(a.imag), np.abs(b.real), np.abs(b.imag)
    conv = CONV[kind]
    real = alpha * (conv(ar, br, g) + conv(ai, bi, g))
    imag = alpha * (conv(ar, bi, g) + conv(ai, br, g))
    if beta != 0.0:
        c_name = "C" if "C" in inputs else out
        c = load_tensor(problem, inputs[c_name], c_name)
        real, imag = real + beta * np.abs(c.real), imag + beta * np.abs(c.imag)
    return {out: store_tensor(problem, out, real + 1j * imag)}


def pointwise_conv(inputs, problem, reference):
    count = gemm_epilogue_roundings(problem)
    if count == 0:
        return {}
    return {k: count * v for k, v in scale_conv(inputs, problem).items()}


def conv_reduction_length(problem: Problem) -> int:
    """Terms summed per output: C/groups * taps (fprop), K/groups * taps (dgrad; an upper
    bound when stride > 1 leaves some taps out), N * output positions (wgrad); twice that
    for a complex conv (each part sums two real products per term)."""
    g = geometry(problem)
    taps = math.prod(g.taps)
    kind = conv_kind(problem)
    if kind == "fprop":
        terms = (g.c // g.groups) * taps
    elif kind == "dgrad":
        terms = (g.k // g.groups) * taps
    else:
        terms = g.n * math.prod(g.out_spatial)
    return 2 * terms if is_complex(problem) else terms


def range_conv(problem, buffer):
    """Operands: products neither overflow n-fold (n the reduction length) in the
    accumulator and output nor underflow the accumulator; C: beta C must fit the output."""
    p = problem.params
    out, acc = _fmt(problem.buffer(_out_name(problem)).dtype), _fmt(str(p.get("accumulator") or "float32"))
    n = conv_reduction_length(problem)
    if buffer.name == "C":
        return _fmt(buffer.dtype).tiny, out.max_finite / (4 * max(1.0, abs(float(p.get("beta", 1.0)))))
    limit = min(out.max_finite, acc.max_finite) / (4 * n * max(1.0, abs(float(p.get("alpha", 1.0)))))
    lo, hi = max(_fmt(buffer.dtype).tiny, math.sqrt(acc.tiny)), math.sqrt(limit)
    narrow = FORMATS.get(str(p.get("math_input") or ""))
    if narrow is not None:
        lo, hi = max(lo, narrow.tiny), min(hi, math.sqrt(narrow.max_finite) / 2)
    return lo, hi


def stress_conv(problem, buffer, context, previous):
    """Operands: tail-heavy, alternating and wide rows along their channels (the innermost
    part of every reduction); C keeps normal values."""
    from .. import stress as st
    if buffer.name == "C":
        return st.row_stress((st.p_normal,), buffer.shape, context)
    shape = tuple(buffer.shape)
    row = shape[-1] * (shape[-2] if is_complex(problem) else 1)  # a complex row: its parts, interleaved
    flat = st.row_stress(st.PRODUCTS, (math.prod(shape) // row, row), context)
    return np.asarray(flat).reshape(shape)


def _ops():
    specs = []
    for dims in (2, 3):
        for kind, ((first, second), out) in OPERANDS.items():
            name = f"conv{dims}d_{kind}"
            specs.append(OpSpec(
                name, ref_conv, conv_reduction_length,
                f"{out} = alpha {kind}({first}, {second}) + beta C, channels-last {dims}-D, "
                f"params stride/padding/dilation/groups",
                scale_conv, range_conv,
                f"|alpha| {kind}(|{first}|, |{second}|) + |beta| |C|, n = "
                + {"fprop": "C/groups x taps", "dgrad": "K/groups x taps", "wgrad": "N x output positions"}[kind],
                range_int_products(conv_reduction_length, first, second),
                pointwise_conv, stress_conv,
                "e S_i, e the epilogue's float32 roundings of one term (alpha, beta, their products, the add)",
                exact=conv_exact, exact_flops=kind in ("fprop", "wgrad")))
    return specs


OPS = _ops()


def conv_shapes(n: int, spatial, c: int, k: int, taps, stride, padding, dilation, groups: int = 1) -> dict:
    """Shapes of the activation, filter and output tensors of one conv (channels-last)."""
    out = tuple(conv_output_extent(h, t, s, p, d) for h, t, s, p, d in zip(spatial, taps, stride, padding, dilation))
    if min(out) < 1:
        raise SpecError(f"conv with input {tuple(spatial)}, filter {tuple(taps)}, stride {tuple(stride)}, "
                        f"padding {tuple(padding)}, dilation {tuple(dilation)} has no output position; "
                        f"give a larger input or more padding")
    if c % groups or k % groups:
        raise SpecError(f"conv groups {groups} must divide C={c} and K={k}")
    return {"activation": (n, *spatial, c), "filter": (k, *taps, c // groups), "output": (n, *out, k)}


def conv_buffers(kind: str, shapes: dict, dtype_a: str, dtype_b: str, dtype_out: str,
                 dtype_c: str = "", init_a=None, init_b=None, layout: str = "nhwc",
                 complex_parts: bool = False) -> list:
    """The problem's buffers for ``kind`` in the order the kernel's operands A, B, (C,) D
    take them: fprop x, w -> y; dgrad dy, w -> dx; wgrad dy, x -> dw. ``shapes`` are
    logical; ``layout`` and ``complex_parts`` give the buffers their storage shapes (a
    complex buffer's dtype is its parts')."""
    from ..model import Buffer
    logical = {"x": shapes["activation"], "dx": shapes["activation"], "w": shapes["filter"],
               "dw": shapes["filter"], "y": shapes["output"], "dy": shapes["output"]}
    role_shape = {name: interleaved_shape(shape, layout, name in FILTERS) + ((2,) if complex_parts else ())
                  for name, shape in logical.items()}
    (first, second), out = OPERANDS[kind]
    buffers = [Buffer(first, dtype_a, role_shape[first], "in", init=init_a),
               Buffer(second, dtype_b, role_shape[second], "in", init=init_b)]
    if dtype_c:
        buffers.append(Buffer("C", dtype_c, role_shape[out], "in"))
    buffers.append(Buffer(out, dtype_out, role_shape[out], "out"))
    return buffers
