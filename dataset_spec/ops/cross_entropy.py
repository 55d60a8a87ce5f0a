"""Cross entropy over rows of logits, as LLM training kernels fuse it: the per-row loss,
optionally the row's log-sum-exp, and optionally the gradient written over the logits in
place (Liger-Kernel's ``liger_cross_entropy_kernel``).

Buffers: ``x`` logits (rows, V), float, role ``in`` or ``inout`` (inout: after the kernel it
holds d loss / d x); ``target`` (rows,) integer class indices; outputs ``loss`` (rows,) and
``lse`` (rows,) when declared. Params: ``ignore_index`` (-100; a row whose target equals it
has loss 0 and gradient 0), ``label_smoothing`` (0), ``reduction`` (``none``, or ``mean``:
the loss and gradient of every row divided by the number of rows whose target is not
ignored, ``n_non_ignore``, as the kernel's caller passes it; ``sum``: as none),
``ignored_rows`` (0: every label a class index; k: every trial draws the labels itself,
uniform class indices with exactly k rows, at random places, set to ``ignore_index``, so
a kernel that takes ``n_non_ignore`` as an argument is called with rows - k in every trial).

    lse = log sum_j exp(x_j),  loss = lse - (1 - ls) x_y - (ls / V) sum_j x_j
    grad_j = softmax(x)_j - (1 - ls) [j = y] - ls / V

Error model. The sum of exps is a V-term reduction whose relative error is an absolute
error of lse: S(lse) = 2 (online rescalings, as softmax's), the loss adds its terms'
magnitudes (S = |lse| + |x_y| + ls mean|x| + 2, the smoothing sum's own V terms); exp's
argument carries the roundoff of x_j - max, relative to |x_j - max| (P = 4 sum_j p_j |x_j -
max| + 6 (|lse| + 1), as softmax's). The gradient is softmax's error (S = 2 p_j, P = p_j (4
(|x_j - max| + sum p |x - max|) + 6)) plus the rounding of the subtraction. With smoothing,
the subtracted ls / V is itself a float32 value (ls rounded to float32, then divided by V:
P += 2 ls / V), as is 1 - ls at the label (P += 1 - ls): where p_j is far below ls / V, or
p_y near 1 - ls, the gradient is made of them and their roundings are its error.
"""
from __future__ import annotations

import numpy as np

from ..model import SpecError
from .spec import OpSpec, _declared, _inputs_of

SECONDARY = ("lse",)
SOFTMAX_ARGUMENT_ROUNDINGS = 4
FIXED_ROUNDINGS = 6
SMOOTHING_ROUNDINGS = 2  # ls / V in float32: ls's rounding and the division's
LOGIT_RANGE = (2.0 ** -10, 2.0 ** 6)  # logits of trained models; exp(x - max) spans every binade below


def _params(problem):
    p = problem.params
    reduction = str(p.get("reduction", "none"))
    if reduction not in ("none", "mean", "sum"):
        raise SpecError(f"problem {problem.problem_id}: params.reduction must be none, mean or sum, got {reduction!r}")
    return int(p.get("ignore_index", -100)), float(p.get("label_smoothing", 0.0)), reduction


def _parts(inputs, problem):
    """x rows (float64), target (int), kept rows mask, p = softmax, distances |x - max|, lse, the
    divisor of the reduction."""
    x, target = _inputs_of(problem, inputs, "x", "target")
    ignore_index, _, reduction = _params(problem)
    vocab = x.shape[-1]
    rows = np.asarray(x, dtype=np.float64).reshape(-1, vocab)
    labels = np.rint(np.asarray(target, dtype=np.float64)).astype(np.int64).reshape(-1)
    kept = labels != ignore_index
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        top = rows.max(axis=-1, keepdims=True)
        dist = top - rows
        e = np.exp(-dist)
        total = e.sum(axis=-1, keepdims=True)
        p = e / total
        lse = (top + np.log(total)).reshape(-1)
    divisor = max(1, int(kept.sum())) if reduction == "mean" else 1
    return rows, labels, kept, p, dist, lse, divisor


def ref_cross_entropy(inputs, problem):
    rows, labels, kept, p, _, lse, divisor = _parts(inputs, problem)
    _, smoothing, _ = _params(problem)
    vocab = rows.shape[-1]
    safe = np.where(kept, labels, 0).clip(0, vocab - 1)
    picked = rows[np.arange(rows.shape[0]), safe]
    with np.errstate(invalid="ignore"):
        loss = lse - (1.0 - smoothing) * picked - (smoothing / vocab) * rows.sum(axis=-1)
    result = {"loss": np.where(kept, loss / divisor, 0.0).reshape(problem.buffer("loss").shape)}
    if _declared(problem, "lse"):
        result["lse"] = lse.reshape(problem.buffer("lse").shape)
    if _declared(problem, "x"):
        grad = p - smoothing / vocab
        grad[np.arange(rows.shape[0]), safe] -= (1.0 - smoothing)
        result["x"] = (np.where(kept[:, None], grad, 0.0) / divisor).reshape(problem.buffer("x").shape)
    return result


def scale_cross_entropy(inputs, problem):
    rows, labels, kept, p, _, lse, divisor = _parts(inputs, problem)
    _, smoothing, _ = _params(problem)
    vocab = rows.shape[-1]
    safe = np.where(kept, labels, 0).clip(0, vocab - 1)
    picked = abs(rows[np.arange(rows.shape[0]), safe])
    loss = abs(lse) + picked + smoothing * abs(rows).mean(axis=-1) + 2.0
    result = {"loss": (np.where(kept, loss, 0.0) / divisor).reshape(problem.buffer("loss").shape)}
    if _declared(problem, "lse"):
        result["lse"] = np.full(problem.buffer("lse").shape, 2.0)
    if _declared(problem, "x"):
        result["x"] = (np.where(kept[:, None], 2.0 * p, 0.0) / divisor).reshape(problem.buffer("x").shape)
    return result


def pointwise_cross_entropy(inputs, problem, reference):
    rows, labels, kept, p, dist, lse, divisor = _parts(inputs, problem)
    _, smoothing, _ = _params(problem)
    with np.errstate(invalid="ignore", over="ignore"):
        spread = np.where(p > 0, p * dist, 0.0).sum(axis=-1)
        argument = SOFTMAX_ARGUMENT_ROUNDINGS * spread + FIXED_ROUNDINGS * (abs(lse) + 1.0)
        result = {"loss": (np.where(kept, argument, 0.0) / divisor).reshape(problem.buffer("loss").shape)}
        if "lse" in reference:
            result["lse"] = argument.reshape(problem.buffer("lse").shape)
        if "x" in reference:
            grad = p * (SOFTMAX_ARGUMENT_ROUNDINGS * (np.where(p > 0, dist, 0.0) + spread[:, None])
                        + FIXED_ROUNDINGS)
            if smoothing:
                grad = grad + SMOOTHING_ROUNDINGS * smoothing / rows.shape[-1]
                safe = np.where(kept, labels, 0).clip(0, rows.shape[-1] - 1)
                grad[np.arange(rows.shape[0]), safe] += 1.0 - smoothing
            result["x"] = (np.where(kept[:, None], np.nan_to_num(grad, posinf=np.inf), 0.0) / divisor).reshape(
                problem.buffer("x").shape)
    return result


def outputs_cross_entropy(problem):
    return ("loss",) + tuple(n for n in ("lse", "x") if _declared(problem, n))


def range_logits(problem, buffer):
    return LOGIT_RANGE


def ignored_rows(problem) -> int:
    """params.ignored_rows, checked against the row count (0 when not given)."""
    count = problem.params.get("ignored_rows", 0)
    rows = int(problem.buffer("target").numel)
    if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count < rows:
        raise SpecError(f"problem {problem.problem_id}: params.ignored_rows must be an integer from 0 to "
                        f"{rows - 1} (rows whose label is ignore_index in every trial), got {count!r}")
    return count


def labels_derived(problem, name) -> bool:
    return name == "target" and ignored_rows(problem) > 0


def derive_target(problem, buffer, rng, previous=None):
    """Class indices, uniform over 0 .. V - 1 with both ends present, then exactly
    ``ignored_rows`` rows at random places set to ignore_index."""
    ignore_index, _, _ = _params(problem)
    vocab = vocabulary(problem)
    labels = rng.integers(0, vocab, buffer.numel)
    labels[:2] = (0, vocab - 1)
    labels = rng.permutation(labels)
    labels[rng.choice(buffer.numel, ignored_rows(problem), replace=False)] = ignore_index
    return labels.astype(np.float64).reshape(buffer.shape)


def range_target(problem, buffer):
    """Class indices 0 .. V - 1 (none equals ignore_index, so n_non_ignore is the row count)."""
    if buffer.name != "target":
        return None
    return 0, int(problem.buffer("x").shape[-1])


def vocabulary(problem) -> int:
    return int(problem.buffer("x").shape[-1])


OPS = [
    OpSpec("cross_entropy", ref_cross_entropy, vocabulary,
           "per-row loss = lse(x) - (1 - ls) x_target - ls mean(x); optional lse, and the gradient in x "
           "(inout); params ignore_index, label_smoothing, reduction", scale_cross_entropy, range_logits,
           "loss: |lse| + |x_y| + ls mean|x| + 2; lse: 2; x (gradient): 2 p_j; n = V",
           integer_range=range_target, pointwise_scale=pointwise_cross_entropy,
           pointwise_text="4 sum_j p_j |x_j - max| + 6 (|lse| + 1); gradient: p_j (4 (|x_j - max| + spread) + 6) "
                          "+ 2 ls / V, + (1 - ls) at the label when ls > 0",
           outputs=outputs_cross_entropy, derive=derive_target, derived_when=labels_derived),
]
