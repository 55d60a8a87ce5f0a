"""Ops of the LLM-operator sources (attention, fused norms, gated MLPs, LoRA): float64
references, error scales and input domains, registered into ``dataset_spec.ops.OPS``.

Error model (docs/mirage.md). Kernels of these ops keep float16 intermediates (partial
sums, normalised operands, exp values) between float32 computations, so every stored
intermediate is one rounding of relative size <= u = 2^-11. The scale S of an output
element is the root sum of squares of the magnitudes those roundings carry to it
(first-order propagation); problems set ``params["math_input"] = "float16"``, so the
verifier allows 2 * 2^-10 * S = 4u * S: about 7 standard deviations of the random walk the
roundings make, and never less than their worst case while at most 16 roundings matter.

Partial sums: a schedule may round a partial sum of any contiguous chunk of a reduction
to float16. Tensor-core and float32 loops add at least 16 terms before any store, so
``dyadic_sq`` counts every dyadic chunk length from 16 up to the whole reduction (one
rounding per length), plus the single terms (operands rounded before the product).
"""
from __future__ import annotations

import numpy as np

from .spec import OpSpec, _inputs_of, _out_name, array_namespace, as_float64, filled_like, row_max

MIN_CHUNK = 16           # terms a kernel adds in float32 before it may store a partial sum
MAX_PARTIAL_ELEMS = 1 << 23  # float64 elements per batch of partial sums (64 MiB)


def dyadic_sq(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Sum over chunk lengths c in {1} + {16, 32, ..., n} of sum over chunks J of
    (a[..., J] @ b[..., J, :])**2, for a (..., M, n) and b (..., n, N): numpy arrays, or
    torch tensors on one device."""
    xp = array_namespace(a)
    a, b = as_float64(a), as_float64(b)
    n = a.shape[-1]
    total = xp.matmul(a * a, b * b)
    c = MIN_CHUNK
    lengths = []
    while c < n:
        if n % c == 0:
            lengths.append(c)
        c *= 2
    lengths.append(n)
    for c in lengths:
        total = total + _chunk_squares(a, b, c)
    return total


def _chunk_squares(a, b, c):
    xp = array_namespace(a)
    n, m, width = a.shape[-1], a.shape[-2], b.shape[-1]
    chunks = n // c
    lead = tuple(a.shape[:-2])
    out = filled_like(a, lead + (m, width), 0.0)
    step = max(1, MAX_PARTIAL_ELEMS // max(1, m * width * int(np.prod(lead, dtype=np.int64))))
    for first in range(0, chunks, step):
        last = min(chunks, first + step)
        aj = a[..., first * c:last * c].reshape(lead + (m, last - first, c))
        bj = b[..., first * c:last * c, :].reshape(tuple(b.shape[:-2]) + (last - first, c, width))
        partial = xp.matmul(xp.moveaxis(aj, -2, -3), bj)  # (..., chunks, M, N)
        out += (partial * partial).sum(axis=-3)
    return out


def _silu(x):
    with np.errstate(over="ignore"):
        return x / (1.0 + array_namespace(x).exp(-x))


def _sigmoid(x):
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + array_namespace(x).exp(-x))


def _rms(x):
    return array_namespace(x).sqrt((x * x).mean(axis=-1, keepdims=True))


# ---- attention: O = softmax(Q @ K, last dim) @ V ---------------------------------------
# K is stored transposed ([.., d, n]), as in Mirage's muGraphs. softmax = exp / sum(exp):
# the float64 reference subtracts the row max, which does not change the value.

def ref_attention(inputs, problem):
    q, k, v = _inputs_of(problem, inputs, "Q", "K", "V")
    xp = array_namespace(q)
    x = xp.matmul(q, k)
    e = xp.exp(x - row_max(x))
    return {_out_name(problem): xp.matmul(e / e.sum(axis=-1, keepdims=True), v)}


def scale_attention(inputs, problem):
    """Roundings: each E_j = exp(X_j) (relative u(1 + |X_j|), as X = Q@K is stored in
    float16 first; bounded with |Q|@|K|) moves O by P_j (V_j - O); partial sums of E@V and
    of E over dyadic chunks; the output."""
    q, k, v = _inputs_of(problem, inputs, "Q", "K", "V")
    xp = array_namespace(q)
    x = xp.matmul(q, k)
    amp = 1.0 + xp.matmul(abs(q), abs(k))
    e = xp.exp(x - row_max(x))
    p = e / e.sum(axis=-1, keepdims=True)
    o = xp.matmul(p, v)
    w = (p * amp) ** 2
    per_term = xp.matmul(w, v * v) - 2.0 * o * xp.matmul(w, v) + o * o * w.sum(axis=-1, keepdims=True)
    numerator = dyadic_sq(p, v)
    denominator = dyadic_sq(p, filled_like(p, tuple(p.shape[:-2]) + (p.shape[-1], 1), 1.0))
    total = per_term.clip(min=0.0) + numerator + o * o * (denominator + 2.0)  # clip keeps NaN, as np.maximum
    return {_out_name(problem): xp.sqrt(total)}


def attention_length(problem) -> int:
    return int(problem.buffer("K").shape[-1])


# ---- rmsnorm_matmul: Y = (X / rms(X)) @ W, rms over the last dim, no weight, no eps ------

def ref_rmsnorm_matmul(inputs, problem):
    x, w = _inputs_of(problem, inputs, "X", "W")
    xp = array_namespace(x)
    return {_out_name(problem): xp.matmul(x / _rms(x), w)}


def scale_rmsnorm_matmul(inputs, problem):
    """Roundings: normalised operands and partial sums of (X/r) @ W; r and the output."""
    x, w = _inputs_of(problem, inputs, "X", "W")
    xp = array_namespace(x)
    xn = x / _rms(x)
    y = xp.matmul(xn, w)
    return {_out_name(problem): xp.sqrt(dyadic_sq(xn, w) + 3.0 * y * y)}


# ---- gated_mlp: Y = silu(X @ W1) * (X @ W2) ---------------------------------------------

def ref_gated_mlp(inputs, problem):
    x, w1, w2 = _inputs_of(problem, inputs, "X", "W1", "W2")
    xp = array_namespace(x)
    return {_out_name(problem): _silu(xp.matmul(x, w1)) * xp.matmul(x, w2)}


def scale_gated_mlp(inputs, problem):
    """Roundings of the two GEMMs' partial sums carried through silu' and the product;
    silu's output and the output."""
    x, w1, w2 = _inputs_of(problem, inputs, "X", "W1", "W2")
    xp = array_namespace(x)
    g, u = xp.matmul(x, w1), xp.matmul(x, w2)
    s = _sigmoid(g)
    dsilu = s * (1.0 + g * (1.0 - s))
    y = _silu(g) * u
    total = (dsilu * u) ** 2 * dyadic_sq(x, w1) + _silu(g) ** 2 * dyadic_sq(x, w2) + 2.0 * y * y
    return {_out_name(problem): xp.sqrt(total)}


# ---- lora: Y = X @ W + (X @ A) @ B -------------------------------------------------------

def ref_lora(inputs, problem):
    x, w, a, b = _inputs_of(problem, inputs, "X", "W", "A", "B")
    xp = array_namespace(x)
    return {_out_name(problem): xp.matmul(x, w) + xp.matmul(xp.matmul(x, a), b)}


def scale_lora(inputs, problem):
    """Partial sums of X@W, of T = X@A (carried through B) and of T@B; both addends and
    the output."""
    x, w, a, b = _inputs_of(problem, inputs, "X", "W", "A", "B")
    xp = array_namespace(x)
    t = xp.matmul(x, a)
    main, low = xp.matmul(x, w), xp.matmul(t, b)
    total = (dyadic_sq(x, w) + xp.matmul(dyadic_sq(x, a), b * b) + dyadic_sq(t, b)
             + main * main + low * low + (main + low) ** 2)
    return {_out_name(problem): xp.sqrt(total)}


def lora_length(problem) -> int:
    return int(problem.buffer("X").shape[-1])


# ---- ntrans: Y = rms_norm(X + alpha * (rms_norm(H) + X)) ---------------------------------

def ref_ntrans(inputs, problem):
    h, x, alpha = _inputs_of(problem, inputs, "H", "X", "alpha")
    z = x + alpha * (h / _rms(h) + x)
    return {_out_name(problem): z / _rms(z)}


def scale_ntrans(inputs, problem):
    """Roundings of rms_norm(H) (elementwise and its row scale), of the sum, the product
    and Z; Z's errors move Y directly and through rms(Z); rms(Z) and the output."""
    h, x, alpha = _inputs_of(problem, inputs, "H", "X", "alpha")
    xp = array_namespace(h)
    hn = h / _rms(h)
    t1 = hn + x
    t2 = alpha * t1
    z = t2 + x
    r = _rms(z)
    y = z / r
    e2 = 2.0 * (alpha * hn) ** 2 + (alpha * t1) ** 2 + t2 ** 2 + z ** 2
    n = z.shape[-1]
    through_r = y * y * ((z * z * e2).sum(axis=-1, keepdims=True) / (n * r * r) ** 2)
    total = e2 / (r * r) + through_r + 2.0 * y * y
    return {_out_name(problem): xp.sqrt(total)}


def last_dim_of(name: str):
    return lambda problem: int(problem.buffer(name).shape[-1])


def _declared_range(problem, buffer):
    """Mirage problems record their domain in params.input_range; this is the fallback."""
    return 2.0 ** -10, 1.0


OPS: list = [
    OpSpec("attention", ref_attention, attention_length,
           "O = softmax(Q @ K, last dim) @ V with K stored [.., d, n] (Mirage: E = exp(Q@K); "
           "O = (E / sum(E, -1)) @ V)", scale_attention, _declared_range,
           "root sum of squares of P_j (1 + |Q|@|K|_j) |V_j - O|, dyadic partial sums of P@V and "
           "of P (times O), and O; n = keys", sizes="attention", array_api=True),
    OpSpec("rmsnorm_matmul", ref_rmsnorm_matmul, last_dim_of("X"),
           "Y = (X / sqrt(mean(X^2, -1))) @ W", scale_rmsnorm_matmul, _declared_range,
           "root sum of squares of dyadic partial sums of (X/rms) @ W, and 3 Y; n = X's last dim", array_api=True),
    OpSpec("gated_mlp", ref_gated_mlp, last_dim_of("X"), "Y = silu(X @ W1) * (X @ W2)",
           scale_gated_mlp, _declared_range,
           "root sum of squares of silu'(G) U dyadic(X, W1) and silu(G) dyadic(X, W2), and 2 Y; n = K", array_api=True),
    OpSpec("lora", ref_lora, lora_length, "Y = X @ W + (X @ A) @ B", scale_lora, _declared_range,
           "root sum of squares of dyadic partial sums of X@W, X@A (through B), (X@A)@B, the addends "
           "and Y; n = K", array_api=True),
    OpSpec("ntrans", ref_ntrans, last_dim_of("X"), "Y = rms_norm(X + alpha * (rms_norm(H) + X))",
           scale_ntrans, _declared_range,
           "root sum of squares of the roundings of rms_norm(H), the sum, the product and Z, "
           "through 1/rms(Z), and 2 Y; n = row length", array_api=True),
]

