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
    scales the centred part of y; mean: the sum of |x| over n."""
    x, w, b = inputs["x"], inputs["w"], inputs["b"]
    eps = float(problem.params.get("eps", 1e-5))
    ref = group_norm(inputs, problem)
    square = (x * x).mean(axis=-1)
    amplification = 1.0 + square / (square - ref["mean"] ** 2 + eps)
    groups, hidden = x.shape[1], x.shape[2]
    per_group = w.size // groups
    channel = (np.arange(groups)[:, None] * per_group + np.arange(hidden)[None, :] // (hidden // per_group))
    centred = np.abs(x - ref["mean"][..., None]) * ref["rstd"][..., None] * np.abs(w[channel][None])
    return {"y": centred * amplification[..., None] + np.abs(b[channel][None]),
            "mean": np.abs(x).mean(axis=-1), "rstd": ref["rstd"] * amplification}
