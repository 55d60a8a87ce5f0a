"""float64 references and error scales of the Liger-Kernel 0.8.5 kernels that no registry op
expresses (their call descriptions say ``op: custom`` and ``params.reference:
liger_reference:<function>``; the build ships this file's text inside every row).

Each ``<f>(inputs, problem)`` returns the value every out/inout buffer must hold, computed
from the float64 inputs; ``<f>_error_scale`` returns S per output, the magnitude the bound
multiplies by the float32 roundoff (times ``params.reduction_length``'s accumulation term)
beside the output roundings. Where an exp, log or tanh turns the rounding of its argument
into an error of the output, S carries that argument's magnitude (as the registry's
swiglu and softmax do): a handful of float32 roundings of every term, never a loose
relative tolerance.
"""
import numpy as np

# float32 roundings a transcendental adds, relative to its argument (exp2's product with
# log2(e) and the libdevice/approximate function's own error), and the fixed ones of the
# arithmetic around it (as the registry's SOFTMAX_*_ROUNDINGS)
ARGUMENT = 4.0
FIXED = 6.0


def _sigmoid(a):
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-a))


def swiglu_backward(inputs, problem):
    """da = dc * b * silu'(a), db = dc * silu(a), written over a and b."""
    a, b, dc = inputs["a"], inputs["b"], inputs["dc"]
    sig = _sigmoid(a)
    return {"a": dc * b * (a * sig * (1.0 - sig) + sig), "b": dc * a * sig}


def swiglu_backward_error_scale(inputs, problem):
    """silu'(a) = sig + a sig (1 - sig) cancels near a = -1.28: both terms' magnitudes,
    times exp's argument roundoff (|a|)."""
    a, b, dc = inputs["a"], inputs["b"], inputs["dc"]
    sig = _sigmoid(a)
    growth = ARGUMENT * np.abs(a) + FIXED
    return {"a": np.abs(dc * b) * (sig + np.abs(a) * sig * (1.0 - sig)) * growth,
            "b": np.abs(dc * a * sig) * growth}


SQRT_2_OVER_PI = np.sqrt(2.0 / np.pi)


def _gelu_parts(a):
    z = SQRT_2_OVER_PI * (a + 0.044715 * a ** 3)
    t = np.tanh(z)
    return z, t, 0.5 * a * (1.0 + t)


def geglu_backward(inputs, problem):
    """db = dc * gelu_tanh(a) (gelu rounded to dc's dtype first: params.output_roundings),
    da = dc * b * gelu_tanh'(a), written over a and b."""
    a, b, dc = inputs["a"], inputs["b"], inputs["dc"]
    z, t, gelu = _gelu_parts(a)
    slope = 0.5 * (1.0 + t) + 0.5 * a * (1.0 - t * t) * SQRT_2_OVER_PI * (1.0 + 3 * 0.044715 * a * a)
    return {"a": dc * b * slope, "b": dc * gelu}


def geglu_backward_error_scale(inputs, problem):
    """1 + tanh(z) cancels for negative z, where tanh's error is absolute: the terms'
    magnitudes times tanh's argument roundoff (|z| + 1)."""
    a, b, dc = inputs["a"], inputs["b"], inputs["dc"]
    z, t, gelu = _gelu_parts(a)
    growth = ARGUMENT * (np.abs(z) + 1.0) + FIXED
    terms = 0.5 * (1.0 + np.abs(t)) + 0.5 * np.abs(a) * (1.0 + t * t) * SQRT_2_OVER_PI * (1.0 + 3 * 0.044715 * a * a)
    return {"a": np.abs(dc * b) * terms * growth, "b": np.abs(dc) * 0.5 * np.abs(a) * (1.0 + np.abs(t)) * growth}


def softmax_backward(inputs, problem):
    """dx = y * (dy - sum_j dy_j y_j) per row."""
    dy, y = inputs["dy"], inputs["y"]
    return {"dx": y * (dy - (dy * y).sum(axis=-1, keepdims=True))}


def softmax_backward_error_scale(inputs, problem):
    """The row's dot product (params.reduction_length terms) and the subtraction."""
    dy, y = inputs["dy"], inputs["y"]
    return {"dx": np.abs(y) * (np.abs(dy) + np.abs(dy * y).sum(axis=-1, keepdims=True))}


def relu_squared(inputs, problem):
    """y = max(x, 0)^2."""
    return {"y": np.maximum(inputs["x"], 0.0) ** 2}


def relu_squared_backward(inputs, problem):
    """dx = 2 dy max(x, 0)."""
    return {"dx": 2.0 * inputs["dy"] * np.maximum(inputs["x"], 0.0)}


def dyt(inputs, problem):
    """Dynamic tanh: y = gamma * tanh(alpha * x) + beta (alpha a one-element buffer)."""
    x, alpha, gamma, beta = inputs["x"], inputs["alpha"], inputs["gamma"], inputs["beta"]
    return {"y": gamma * np.tanh(alpha.reshape(()) * x) + beta}


def dyt_error_scale(inputs, problem):
    """tanh's argument alpha x is rounded (relative |alpha x|, carried by tanh' = 1 - t^2),
    tanh itself a few ulp, then the product and the add."""
    x, alpha, gamma, beta = inputs["x"], inputs["alpha"], inputs["gamma"], inputs["beta"]
    z = alpha.reshape(()) * x
    t = np.tanh(z)
    return {"y": np.abs(gamma) * (FIXED * np.abs(t) + ARGUMENT * np.abs(z) * (1.0 - t * t)) + np.abs(beta)}


def kl_div(inputs, problem):
    """Per-row sum of y_true * (log(max(y_true, eps)) - y_pred) (y_pred in log space; the
    kernel's 'sum' and 'batchmean' modes both store the row sums)."""
    y, gt = inputs["y_pred"], inputs["y_true"]
    eps = float(problem.params.get("eps", 1e-10))
    with np.errstate(divide="ignore", invalid="ignore"):
        return {"loss": (gt * (np.log(np.maximum(gt, eps)) - y)).sum(axis=-1)}


def kl_div_error_scale(inputs, problem):
    """A V-term sum (params.reduction_length) of terms |y_true| (|log| + |y_pred|); log's
    error is absolute, a few ulp of 1."""
    y, gt = inputs["y_pred"], inputs["y_true"]
    eps = float(problem.params.get("eps", 1e-10))
    with np.errstate(divide="ignore"):
        log = np.abs(np.log(np.maximum(gt, eps)))
    return {"loss": (np.abs(gt) * (log + np.abs(y) + FIXED)).sum(axis=-1)}


def kl_div_backward(inputs, problem):
    """The gradient of the loss in y_pred before the upstream scale: -y_true."""
    return {"grad": -inputs["y_true"]}


def _jsd_parts(inputs, problem):
    x, y = inputs["x"], inputs["y"]
    beta = float(problem.params["beta"])
    top = np.maximum(x, y)
    log_m = top + np.log(beta * np.exp(y - top) + (1.0 - beta) * np.exp(x - top))
    scale = 1.0 / float(problem.params["n_non_ignore"])
    return x, y, beta, log_m, scale


def jsd(inputs, problem):
    """Generalised JSD of log-probabilities x (Q) and y (P), per element, and its gradient
    in x (written over x), both over n_non_ignore: loss = beta P (y - log M) + (1 - beta) Q (x - log M),
    M = beta P + (1 - beta) Q, dx = (1 - beta) Q (x - log M)."""
    x, y, beta, log_m, scale = _jsd_parts(inputs, problem)
    q, p = np.exp(x), np.exp(y)
    dx = (1.0 - beta) * q * (x - log_m)
    return {"loss": (beta * p * (y - log_m) + dx) * scale, "x": dx * scale}


def jsd_error_scale(inputs, problem):
    """exp turns the roundoff of its argument into a relative error of P and Q (|x|, |y|);
    log M is absolute (|max| + 1) and then multiplied by P or Q."""
    x, y, beta, log_m, scale = _jsd_parts(inputs, problem)
    q, p = np.exp(x), np.exp(y)
    q_term = (1.0 - beta) * q * (np.abs(x) + np.abs(log_m) + 1.0) * (ARGUMENT * (np.abs(x) + 1.0) + FIXED)
    p_term = beta * p * (np.abs(y) + np.abs(log_m) + 1.0) * (ARGUMENT * (np.abs(y) + 1.0) + FIXED)
    return {"loss": (p_term + q_term) * scale, "x": q_term * scale}


def group_norm(inputs, problem):
    """GroupNorm over x (batch, groups, hidden): per (batch, group) mean and rstd (as
    1 / sqrt(E[x^2] - mean^2 + eps), the kernel's formula), y = (x - mean) rstd w_c + b_c
    with channel c = group * channels_per_group + column // (hidden / channels_per_group)."""
    x, w, b = inputs["x"], inputs["w"], inputs["b"]
    eps = float(problem.params.get("eps", 1e-5))
    groups, hidden = x.shape[1], x.shape[2]
    per_group = w.size // groups
    mean = x.mean(axis=-1)
    rstd = 1.0 / np.sqrt((x * x).mean(axis=-1) - mean * mean + eps)
    channel = (np.arange(groups)[:, None] * per_group + np.arange(hidden)[None, :] // (hidden // per_group))
    y = (x - mean[..., None]) * rstd[..., None] * w[channel][None] + b[channel][None]
    return {"y": y, "mean": mean, "rstd": rstd}


def group_norm_error_scale(inputs, problem):
    """The variance is E[x^2] - mean^2: both sums' errors (relative to E[x^2], over
    params.reduction_length terms) become a relative error of rstd of E[x^2] / (2 var), which
    scales the centred part of y; mean: the sum of |x| over n, an absolute error of x - mean
    that y carries times rstd |w| (as the registry's layernorm), however close x is to it."""
    x, w, b = inputs["x"], inputs["w"], inputs["b"]
    eps = float(problem.params.get("eps", 1e-5))
    ref = group_norm(inputs, problem)
    square = (x * x).mean(axis=-1)
    amplification = 1.0 + square / (square - ref["mean"] ** 2 + eps)
    groups, hidden = x.shape[1], x.shape[2]
    per_group = w.size // groups
    channel = (np.arange(groups)[:, None] * per_group + np.arange(hidden)[None, :] // (hidden // per_group))
    magnitude = np.abs(x).mean(axis=-1)
    slope = ref["rstd"][..., None] * np.abs(w[channel][None])
    centred = np.abs(x - ref["mean"][..., None]) * slope
    return {"y": centred * amplification[..., None] + magnitude[..., None] * slope + np.abs(b[channel][None]),
            "mean": magnitude, "rstd": ref["rstd"] * amplification}


def tv_distance(inputs, problem):
    """Total variation distance per row, 0.5 sum |p - q|, and its gradient in p,
    0.5 sign(p - q) (0 where p == q), both times params.scale (1 / BT for batchmean)."""
    p, q = inputs["p"], inputs["q"]
    scale = float(problem.params["scale"])
    return {"loss": 0.5 * np.abs(p - q).sum(axis=-1) * scale, "grads": 0.5 * np.sign(p - q) * scale}


def tv_distance_error_scale(inputs, problem):
    p, q = inputs["p"], inputs["q"]
    scale = float(problem.params["scale"])
    return {"loss": 0.5 * (np.abs(p) + np.abs(q)).sum(axis=-1) * scale, "grads": np.full(p.shape, 0.5 * scale)}


def sparsemax_sorted(inputs, problem):
    """Derived input: each row of x sorted in descending order (Liger's host sorts it)."""
    return -np.sort(-inputs["x"], axis=-1)


def _sparsemax_tau(x):
    """Sparsemax's threshold per row: with z sorted descending and k the largest index with
    1 + k z_k > sum_{j<=k} z_j, tau = (sum_{j<=k} z_j - 1) / k."""
    z = -np.sort(-x, axis=-1)
    cumulative = np.cumsum(z, axis=-1)
    ks = np.arange(1, x.shape[-1] + 1)
    support = (1.0 + ks * z) > cumulative
    k = np.maximum(support.sum(axis=-1, keepdims=True), 1)
    total = np.take_along_axis(cumulative, k - 1, axis=-1)
    return (total - 1.0) / k, k, z


def sparsemax(inputs, problem):
    """sparsemax(x) = max(x - tau, 0) per row (Martins and Astudillo, 2016)."""
    tau, _, _ = _sparsemax_tau(inputs["x"])
    return {"y": np.maximum(inputs["x"] - tau, 0.0)}


def sparsemax_error_scale(inputs, problem):
    """tau is a k-term sum over k: its error is the mean magnitude of the support (the
    cumulative sums that choose k are float32 too, but a near-tie gives either k the same
    tau); then the subtraction."""
    tau, k, z = _sparsemax_tau(inputs["x"])
    ks = np.arange(1, z.shape[-1] + 1)
    support = np.abs(z) * (ks <= k)
    return {"y": np.abs(inputs["x"]) + np.abs(tau) + support.sum(axis=-1, keepdims=True) / k + 1.0 / k}


def sparsemax_backward(inputs, problem):
    """On the support (y > 0): dx = dy - mean of dy over the support (the kernel rounds the
    mean to dx's dtype first: sparsemax_backward_rounded); 0 elsewhere."""
    y, dy = inputs["y"], inputs["dy"]
    support = y > 0
    count = np.maximum(support.sum(axis=-1, keepdims=True), 1)
    mean = np.where(support, dy, 0.0).sum(axis=-1, keepdims=True) / count
    return {"dx": np.where(support, dy - mean, 0.0)}


def sparsemax_backward_error_scale(inputs, problem):
    y, dy = inputs["y"], inputs["dy"]
    support = y > 0
    count = np.maximum(support.sum(axis=-1, keepdims=True), 1)
    mean = np.where(support, np.abs(dy), 0.0).sum(axis=-1, keepdims=True) / count
    return {"dx": np.where(support, np.abs(dy) + mean, 0.0)}


def sparsemax_backward_rounded(inputs, problem):
    """The mean is rounded to dx's dtype before the subtraction, which cancels where dy is
    near it: one roundoff of |mean| on the support, however small dx is."""
    y, dy = inputs["y"], inputs["dy"]
    support = y > 0
    count = np.maximum(support.sum(axis=-1, keepdims=True), 1)
    mean = np.where(support, dy, 0.0).sum(axis=-1, keepdims=True) / count
    return {"dx": np.where(support, np.abs(mean), 0.0)}


def _mrope_tables(inputs, problem):
    """cos and sin of each position's half row, each frequency j taken from the section it
    falls in (t, h, w: params.mrope_section), shaped (batch, seq, 1, head_dim / 2)."""
    cos, sin = inputs["cos"], inputs["sin"]
    t, h = (int(v) for v in problem.params["mrope_section"][:2])
    half = cos.shape[-1] // 2
    section = np.where(np.arange(half) < t, 0, np.where(np.arange(half) < t + h, 1, 2))
    pick = lambda table: np.take_along_axis(table[..., :half], section[None, None, None, :], axis=0)[0]
    return pick(cos)[:, :, None, :], pick(sin)[:, :, None, :]


def _rotate(x, c, s, inverse):
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    s = -s if inverse else s
    return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)


def qwen2vl_mrope(inputs, problem):
    """Qwen2-VL's multimodal RoPE of q and k in place: the rotation of RoPE with each
    frequency's cos/sin read from the temporal, height or width table by section;
    params.inverse: the backward rotation (sin negated)."""
    c, s = _mrope_tables(inputs, problem)
    inverse = bool(problem.params.get("inverse", False))
    return {name: _rotate(inputs[name], c, s, inverse) for name in ("q", "k")}


def qwen2vl_mrope_error_scale(inputs, problem):
    """Two products and a sum per element: |x1 c| + |x2 s| (each product rounded to the
    tables' dtype: params.math_input)."""
    c, s = _mrope_tables(inputs, problem)
    out = {}
    for name in ("q", "k"):
        half = inputs[name].shape[-1] // 2
        x1, x2 = np.abs(inputs[name][..., :half]), np.abs(inputs[name][..., half:])
        out[name] = np.concatenate([x1 * np.abs(c) + x2 * np.abs(s), x2 * np.abs(c) + x1 * np.abs(s)], axis=-1)
    return out


def _complex_pairs(x):
    return x[..., 0::2] + 1j * x[..., 1::2]


def llama4_rope(inputs, problem):
    """Llama 4's RoPE: each (even, odd) pair of a head is a complex number, multiplied by
    the position's frequency cos + i sin (freqs as (seq, head_dim / 2, 2) real pairs);
    params.imag_sign -1 conjugates it (the backward pass)."""
    freqs = inputs["freqs"]
    rotation = freqs[..., 0] + 1j * float(problem.params.get("imag_sign", 1.0)) * freqs[..., 1]
    out = {}
    for name in ("q", "k"):
        z = _complex_pairs(inputs[name]) * rotation[None, :, None, :]
        out[name] = np.stack([z.real, z.imag], axis=-1).reshape(inputs[name].shape)
    return out


def llama4_rope_error_scale(inputs, problem):
    freqs = np.abs(inputs["freqs"])
    out = {}
    for name in ("q", "k"):
        x = inputs[name]
        a, b = np.abs(x[..., 0::2]), np.abs(x[..., 1::2])
        c, d = freqs[None, :, None, :, 0], freqs[None, :, None, :, 1]
        out[name] = np.stack([a * c + b * d, a * d + b * c], axis=-1).reshape(x.shape)
    return out


def swiglu_gate_up(inputs, problem):
    """SwiGLU over a fused gate-up row [gate | up]: c = silu(gate) * up (silu rounded to the
    dtype first: params.output_roundings)."""
    y = inputs["y"]
    half = y.shape[-1] // 2
    gate, up = y[:, :half], y[:, half:]
    return {"c": gate * _sigmoid(gate) * up}


def swiglu_gate_up_error_scale(inputs, problem):
    y = inputs["y"]
    half = y.shape[-1] // 2
    gate, up = y[:, :half], y[:, half:]
    return {"c": np.abs(gate * _sigmoid(gate) * up) * (ARGUMENT * np.abs(gate) + FIXED)}


def swiglu_gate_up_backward(inputs, problem):
    """The gradient of swiglu_gate_up into a fused [d_gate | d_up] row."""
    y, dc = inputs["y"], inputs["dc"]
    half = y.shape[-1] // 2
    grads = swiglu_backward({"a": y[:, :half], "b": y[:, half:], "dc": dc}, problem)
    return {"dy": np.concatenate([grads["a"], grads["b"]], axis=-1)}


def swiglu_gate_up_backward_error_scale(inputs, problem):
    y, dc = inputs["y"], inputs["dc"]
    half = y.shape[-1] // 2
    scales = swiglu_backward_error_scale({"a": y[:, :half], "b": y[:, half:], "dc": dc}, problem)
    return {"dy": np.concatenate([scales["a"], scales["b"]], axis=-1)}


def element_mul(inputs, problem):
    """x scaled in place by the one-element grad_output (fused linear cross entropy's
    gradient scaling)."""
    return {"x": inputs["x"] * inputs["grad_output"].reshape(())}


def causal_mask(inputs, problem):
    """Multi-token attention's mask: scores above the diagonal replaced by params.mask_value."""
    scores = inputs["scores"]
    length = scores.shape[-1]
    future = np.arange(length)[None, :] > np.arange(length)[:, None]
    return {"out": np.where(future, float(problem.params["mask_value"]), scores)}


def causal_mask_backward(inputs, problem):
    """The mask's gradient: grad with the entries above the diagonal zeroed."""
    grad = inputs["grad"]
    length = grad.shape[-1]
    future = np.arange(length)[None, :] > np.arange(length)[:, None]
    return {"out": np.where(future, 0.0, grad)}


def embedding(inputs, problem):
    """out[i] = weight[indices[i]]."""
    return {"out": inputs["weight"][inputs["indices"].astype(np.int64)]}


def embedding_backward(inputs, problem):
    """grad_weight[v] = sum of grad_output rows whose index is v (zero-filled first)."""
    grad = np.zeros(next(b.shape for b in problem.buffers if b.name == "grad_weight"))
    np.add.at(grad, inputs["indices"].astype(np.int64), inputs["grad_output"])
    return {"grad_weight": grad}


def embedding_backward_error_scale(inputs, problem):
    grad = np.zeros(next(b.shape for b in problem.buffers if b.name == "grad_weight"))
    np.add.at(grad, inputs["indices"].astype(np.int64), np.abs(inputs["grad_output"]))
    return {"grad_weight": grad}


def modulated_rms_norm(inputs, problem):
    """y = rmsnorm(x) (w + offset) (1 + scale_m) + shift_m, scale and shift rows shared by
    params.rows_per_modulation consecutive rows; and rstd."""
    x, w, scale, shift = inputs["x"], inputs["w"], inputs["scale"], inputs["shift"]
    rstd = 1.0 / np.sqrt((x * x).mean(axis=-1, keepdims=True) + float(problem.params.get("eps", 1e-6)))
    per = int(problem.params["rows_per_modulation"])
    scale, shift = np.repeat(scale, per, axis=0), np.repeat(shift, per, axis=0)
    y = x * rstd * (w + float(problem.params.get("offset", 0.0))) * (1.0 + scale) + shift
    return {"y": y, "rstd": rstd[:, 0]}


def modulated_rms_norm_error_scale(inputs, problem):
    """The normalised product's magnitude (x * rstd and 1 + scale rounded to bfloat16, each
    relative to it: params.math_input) and the shift's."""
    x, w, scale, shift = inputs["x"], inputs["w"], inputs["scale"], inputs["shift"]
    rstd = 1.0 / np.sqrt((x * x).mean(axis=-1, keepdims=True) + float(problem.params.get("eps", 1e-6)))
    per = int(problem.params["rows_per_modulation"])
    scale, shift = np.repeat(scale, per, axis=0), np.repeat(shift, per, axis=0)
    y = np.abs(x * rstd * (w + float(problem.params.get("offset", 0.0))) * (1.0 + scale))
    return {"y": y + np.abs(shift), "rstd": rstd[:, 0]}
