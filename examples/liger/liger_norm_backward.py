"""float64 references and error scales of Liger-Kernel 0.8.5's norm backward kernels (RMSNorm
row and block, fused add + RMSNorm, LayerNorm, GroupNorm, PolyNorm, DyT) and the statistics
their descriptions derive from x (``params.derived_inputs``: the forward's rstd and mean,
which the backward reads instead of recomputing them).

The weight gradients are the kernels' own outputs: per-program partial sums that the host
adds afterwards. Which rows a program sums is part of the function, so the problem says it:
``params.programs`` P (the launch's program count) and either ``rows_per_program`` R
(program p sums rows p R .. p R + R - 1, clipped at the row count) or ``row_block`` B
(block-strided: row r belongs to program (r // B) mod P). A program with no rows writes 0.

Error scales follow liger_reference.py: S is the sum of the magnitudes each output's terms
carry (a row's dot products for dx, a program's rows for dW), multiplied by the float32 bound
with n = params.reduction_length; where a kernel rounds x * rstd to bfloat16 before the dW
product, the problem says ``math_input: {dw: bfloat16}`` and S is the root sum of squares of
those terms (independent roundings of at most 2^-8 of each).
"""
import numpy as np

# float32 roundings of tanh's argument and of the arithmetic around it (liger_reference.py's)
ARGUMENT = 4.0
FIXED = 6.0


def _eps(problem, default):
    return float(problem.params.get("eps", default))


def rms_norm_rstd(inputs, problem):
    """Derived input: 1 / sqrt(mean(x^2) + eps) per row, as the forward stored it."""
    x = inputs["x"]
    return 1.0 / np.sqrt((x * x).mean(axis=-1) + _eps(problem, 1e-6))


def layer_norm_mean(inputs, problem):
    """Derived input: the row mean of x (the last axis; a GroupNorm's group row)."""
    return inputs["x"].mean(axis=-1)


def layer_norm_rstd(inputs, problem):
    """Derived input: 1 / sqrt(var + eps), the two-pass variance of each row."""
    x = inputs["x"]
    centred = x - x.mean(axis=-1, keepdims=True)
    return 1.0 / np.sqrt((centred * centred).mean(axis=-1) + _eps(problem, 1e-5))


def poly_norm_rstd(inputs, problem):
    """Derived input: (rstd of x^3, of x^2, of x) per row, the forward's (rows, 3) cache."""
    x = inputs["x"]
    eps = _eps(problem, 1e-6)
    return np.stack([1.0 / np.sqrt((x ** (2 * p)).mean(axis=-1) + eps) for p in (3, 2, 1)], axis=-1)


def per_program(terms, problem):
    """Sum rows of ``terms`` (rows first) into the (P, ...) partial sums of params' split."""
    p = problem.params
    programs, rows = int(p["programs"]), terms.shape[0]
    index = np.arange(rows)
    owner = (index // int(p["rows_per_program"]) if "rows_per_program" in p
             else (index // int(p["row_block"])) % programs)
    out = np.zeros((programs,) + terms.shape[1:])
    np.add.at(out, owner, terms)
    return out


def _shaped(problem, name, value):
    return np.asarray(value).reshape(next(b.shape for b in problem.buffers if b.name == name))


def rms_norm_backward(inputs, problem):
    """dx = rstd (m - rstd^2 mean(m x) x) (+ ds, fused add), m = dy (w + offset);
    dw = per-program sums of dy x rstd."""
    dy, x, w, rstd = inputs["dy"], inputs["x"], inputs["w"], inputs["rstd"][:, None]
    m = dy * (w + float(problem.params.get("offset", 0.0)))
    dx = rstd * m - rstd ** 3 * (m * x).mean(axis=-1, keepdims=True) * x
    if "ds" in inputs:
        dx = dx + inputs["ds"]
    return {"dx": dx, "dw": per_program(dy * x * rstd, problem)}


def rms_norm_backward_error_scale(inputs, problem):
    dy, x, w, rstd = inputs["dy"], inputs["x"], inputs["w"], inputs["rstd"][:, None]
    m = np.abs(dy * (w + float(problem.params.get("offset", 0.0))))
    dx = rstd * m + rstd ** 3 * np.abs(m * x).mean(axis=-1, keepdims=True) * np.abs(x)
    if "ds" in inputs:
        dx = dx + np.abs(inputs["ds"])
    # dW's terms are each rounded to bfloat16 (math_input): independent errors of at most
    # 2^-8 of their term, so the root sum of squares of the terms (as fla_reference.py's)
    return {"dx": dx, "dw": np.sqrt(per_program((dy * x * rstd) ** 2, problem))}


def _layer_norm_parts(inputs, problem, x, dy, w, mean, rstd):
    x_hat = (x - mean) * rstd
    wdy = w * dy
    c1 = (x_hat * wdy).mean(axis=-1, keepdims=True)
    c2 = wdy.mean(axis=-1, keepdims=True)
    return x_hat, wdy, c1, c2


def layer_norm_backward(inputs, problem):
    """x_hat = (x - mean) rstd, dx = (w dy - (x_hat mean(x_hat w dy) + mean(w dy))) rstd;
    dw, db = per-program sums of dy x_hat and dy."""
    x, dy, w = inputs["x"], inputs["dy"], inputs["w"]
    mean, rstd = inputs["mean"][:, None], inputs["rstd"][:, None]
    x_hat, wdy, c1, c2 = _layer_norm_parts(inputs, problem, x, dy, w, mean, rstd)
    return {"dx": (wdy - (x_hat * c1 + c2)) * rstd, "dw": per_program(dy * x_hat, problem),
            "db": per_program(dy, problem)}


def layer_norm_backward_error_scale(inputs, problem):
    x, dy, w = inputs["x"], inputs["dy"], inputs["w"]
    mean, rstd = inputs["mean"][:, None], inputs["rstd"][:, None]
    x_hat, wdy, _, _ = _layer_norm_parts(inputs, problem, x, dy, w, mean, rstd)
    c1, c2 = np.abs(x_hat * wdy).mean(axis=-1, keepdims=True), np.abs(wdy).mean(axis=-1, keepdims=True)
    return {"dx": (np.abs(wdy) + np.abs(x_hat) * c1 + c2) * rstd,
            "dw": per_program(np.abs(dy * x_hat), problem), "db": per_program(np.abs(dy), problem)}


def _group_parts(inputs):
    """x, dy as (batch, groups, channels per group, hidden); w per channel likewise."""
    x, dy, w = inputs["x"], inputs["dy"], inputs["w"]
    batch, groups = x.shape[:2]
    per_group = w.size // groups
    shape = (batch, groups, per_group, -1)
    mean, rstd = inputs["mean"][:, :, None, None], inputs["rstd"][:, :, None, None]
    x4, dy4 = x.reshape(shape), dy.reshape(shape)
    x_hat = (x4 - mean) * rstd
    return x_hat, dy4, w.reshape(1, groups, per_group, 1), rstd


def group_norm_backward(inputs, problem):
    """Per (batch, group) as layer_norm_backward over the group's channels x positions;
    dw, db per channel summed over batch and positions (the kernel adds each batch's share
    atomically into zero-filled buffers)."""
    x_hat, dy, w, rstd = _group_parts(inputs)
    wdy = w * dy
    c1 = (x_hat * wdy).mean(axis=(2, 3), keepdims=True)
    c2 = wdy.mean(axis=(2, 3), keepdims=True)
    dx = (wdy - (x_hat * c1 + c2)) * rstd
    return {"dx": _shaped(problem, "dx", dx), "dw": (dy * x_hat).sum(axis=(0, 3)).reshape(-1),
            "db": dy.sum(axis=(0, 3)).reshape(-1)}


def group_norm_backward_error_scale(inputs, problem):
    x_hat, dy, w, rstd = _group_parts(inputs)
    wdy = np.abs(w * dy)
    c1 = (np.abs(x_hat) * wdy).mean(axis=(2, 3), keepdims=True)
    c2 = wdy.mean(axis=(2, 3), keepdims=True)
    return {"dx": _shaped(problem, "dx", (wdy + np.abs(x_hat) * c1 + c2) * rstd),
            "dw": np.abs(dy * x_hat).sum(axis=(0, 3)).reshape(-1), "db": np.abs(dy).sum(axis=(0, 3)).reshape(-1)}


def poly_norm(inputs, problem):
    """y = w0 x^3 rstd3 + w1 x^2 rstd2 + w2 x rstd1 + b (rstd_p of x^p), and the rstd cache."""
    x, w, b = inputs["x"], inputs["w"], inputs["b"]
    rstd = poly_norm_rstd(inputs, problem)
    y = sum(w[i] * x ** p * rstd[:, i:i + 1] for i, p in enumerate((3, 2, 1))) + b.reshape(())
    return {"y": y, "rstd": rstd}


def poly_norm_error_scale(inputs, problem):
    """Each normalised power's magnitude (its rstd from an N-term sum of x^2p, whose relative
    error becomes a relative error of the term), plus |b|; rstd: its own value."""
    x, w, b = inputs["x"], inputs["w"], inputs["b"]
    rstd = poly_norm_rstd(inputs, problem)
    terms = sum(np.abs(w[i] * x ** p) * rstd[:, i:i + 1] for i, p in enumerate((3, 2, 1)))
    return {"y": FIXED * terms + np.abs(b.reshape(())), "rstd": rstd}


def poly_norm_backward(inputs, problem):
    """dx = sum_p w_p rstd_p (p x^(p-1) dy - (p / N) x^(2p-1) rstd_p^2 S_p), S_p = sum(dy x^p);
    dw_p, db = per-program sums of rstd_p S_p and of the row sums of dy."""
    dy, x, w, rstd = inputs["dy"], inputs["x"], inputs["w"], inputs["rstd"]
    n = x.shape[-1]
    dx = np.zeros_like(x)
    dw = []
    for i, p in enumerate((3, 2, 1)):
        r = rstd[:, i:i + 1]
        s = (dy * x ** p).sum(axis=-1, keepdims=True)
        dx = dx + w[i] * r * (p * x ** (p - 1) * dy - (p / n) * x ** (2 * p - 1) * r * r * s)
        dw.append((r * s)[:, 0])
    return {"dx": dx, "dw": per_program(np.stack(dw, axis=-1), problem),
            "db": per_program(dy.sum(axis=-1), problem)}


def poly_norm_backward_error_scale(inputs, problem):
    dy, x, w, rstd = np.abs(inputs["dy"]), np.abs(inputs["x"]), np.abs(inputs["w"]), inputs["rstd"]
    n = x.shape[-1]
    dx, dw = np.zeros_like(x), []
    for i, p in enumerate((3, 2, 1)):
        r = rstd[:, i:i + 1]
        s = (dy * x ** p).sum(axis=-1, keepdims=True)
        dx = dx + FIXED * w[i] * r * (p * x ** (p - 1) * dy + (p / n) * x ** (2 * p - 1) * r * r * s)
        dw.append((r * s)[:, 0])
    return {"dx": dx, "dw": per_program(np.stack(dw, axis=-1), problem),
            "db": per_program(dy.sum(axis=-1), problem)}


def _dyt_parts(inputs):
    x, dy, alpha, gamma = inputs["x"], inputs["dy"], inputs["alpha"].reshape(()), inputs["gamma"]
    z = alpha * x
    t = np.tanh(z)
    return x, dy, alpha, gamma, z, t


def _dyt_da_blocks(values, problem):
    """Per-program sums of ``values`` (rows x N) split into the kernel's column blocks of
    params.block_n, laid out as the kernel's DA rows of cdiv(N, 512) slots (the slots past
    cdiv(N, block_n) stay 0)."""
    block, n = int(problem.params["block_n"]), values.shape[-1]
    blocks = -(-n // block)
    sums = np.stack([values[:, b * block:(b + 1) * block].sum(axis=-1) for b in range(blocks)], axis=-1)
    out = np.zeros((int(problem.params["programs"]), -(-n // 512)))
    out[:, :blocks] = per_program(sums, problem)
    return out


def dyt_backward(inputs, problem):
    """DyT backward, y = gamma tanh(alpha x) + beta: dx = alpha (1 - t^2) dy gamma; per
    program (rows strided by the program count): dgamma = sum dy t, dbeta = sum dy, and
    dalpha = sum x (1 - t^2) dy gamma per column block of params.block_n."""
    x, dy, alpha, gamma, z, t = _dyt_parts(inputs)
    tmp = (1.0 - t * t) * dy * gamma
    return {"dx": alpha * tmp, "dg": per_program(dy * t, problem), "db": per_program(dy, problem),
            "da": _dyt_da_blocks(x * tmp, problem)}


def dyt_backward_error_scale(inputs, problem):
    """1 - t^2 cancels as |t| -> 1: its error is absolute (a few ulp of 1), plus tanh's
    argument roundoff carried by tanh' = 1 - t^2."""
    x, dy, alpha, gamma, z, t = _dyt_parts(inputs)
    slope = FIXED + ARGUMENT * np.abs(z) * (1.0 - t * t)
    tmp = np.abs(dy * gamma) * slope
    return {"dx": np.abs(alpha) * tmp, "dg": per_program(np.abs(dy) * (FIXED * np.abs(t) + slope), problem),
            "db": per_program(np.abs(dy), problem), "da": _dyt_da_blocks(np.abs(x) * tmp, problem)}
