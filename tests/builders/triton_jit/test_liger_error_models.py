"""The error models of three Liger-Kernel descriptions (examples/liger) against numpy
emulations of the kernels' float32 arithmetic, judged by the verifier over every trial kind:
each correct kernel passes where the model once failed it on a GPU, and a wrong one still
fails. Sparsemax backward rounds the support's mean to bfloat16 before subtracting it
(``sparsemax_backward_rounded``: a roundoff of |mean| where dx cancels); cross entropy with
label smoothing subtracts ls / V as a float32 value; GroupNorm's y carries its mean's error
(times rstd |w|) however close x is to the mean."""
from pathlib import Path

import numpy as np

from dataset_spec.model import Buffer, Problem
from dataset_spec.ops import get_op
from dataset_spec.numerics import accumulation_coefficient
from helpers import judge_outputs, rounded

REFERENCE = (Path(__file__).resolve().parents[3] / "examples" / "liger" / "liger_reference.py").read_text()
U_BF16 = 2.0 ** -8


def _verdicts(problem, kernel):
    """The verifier's status for ``kernel`` (trial values -> {output: float64}), and the
    prepared trials."""
    verdict, prepared = judge_outputs(problem, kernel)
    return verdict.status, prepared


def _sparsemax_backward_problem():
    rows, cols = 64, 1024
    return Problem("sparsemax_backward", "custom", [
        Buffer("y", "bfloat16", (rows, cols)), Buffer("dy", "bfloat16", (rows, cols)),
        Buffer("dx", "bfloat16", (rows, cols), "out")],
        params={"reference": "liger_reference:sparsemax_backward", "reference_source": REFERENCE,
                "reduction_length": cols})


def _liger_sparsemax_backward(v, over_every_column=False):
    """_sparsemax_backward_kernel: the support's float32 sum over its count, rounded to
    bfloat16 (the gradient's dtype), subtracted in float32, the difference stored."""
    y, dy = v["y"].astype(np.float32), v["dy"].astype(np.float32)
    support = y > 0
    taken = np.ones_like(support) if over_every_column else support
    total = np.where(taken, dy, np.float32(0)).sum(axis=-1, keepdims=True, dtype=np.float32)
    mean = rounded(total / np.maximum(taken.sum(axis=-1, keepdims=True), 1).astype(np.float32), "bfloat16")
    return {"dx": rounded(np.where(support, dy - mean.astype(np.float32), np.float32(0)), "bfloat16")}


def test_sparsemax_backward_mean_rounded_to_bfloat16_passes_and_a_wrong_mean_fails():
    problem = _sparsemax_backward_problem()
    status, prepared = _verdicts(problem, _liger_sparsemax_backward)
    assert status == "passed"
    # the mean's rounding is needed: without it, the store's roundoff of |dx| alone is exceeded
    trial = prepared.trials[0]
    op = get_op("custom")
    ref = op.reference(trial.values, problem)["dx"]
    scale = op.scales(trial.values, problem, {"dx": ref})["dx"]
    without = op.bound_terms(problem, "bfloat16", "dx").bound(ref, scale)
    err = np.abs(_liger_sparsemax_backward(trial.values)["dx"] - ref)
    assert (err > without).any() and (err <= prepared.specs[0].bounds[0]).all()
    wrong, _ = _verdicts(problem, lambda v: _liger_sparsemax_backward(v, over_every_column=True))
    assert wrong == "wrong_result"
    scaled, _ = _verdicts(problem, lambda v: {"dx": rounded(_liger_sparsemax_backward(v)["dx"] * (1 + 2 ** -7),
                                                             "bfloat16")})
    assert scaled == "wrong_result"  # a second rounding of |dx| is no longer allowed


def _cross_entropy_problem(rows=32, vocab=4000):
    return Problem("ce", "cross_entropy", [
        Buffer("x", "float32", (rows, vocab), "inout"), Buffer("target", "int64", (rows,)),
        Buffer("loss", "float32", (rows,), "out")],
        params={"reduction": "none", "label_smoothing": 0.1, "ignore_index": -100})


def _liger_cross_entropy_gradient(v, eps=None):
    """liger_cross_entropy_kernel's gradient (reduction none): softmax in float32, then
    + (-eps) with eps = ls / V computed in float32, and - (1 - ls) at the label."""
    x = v["x"].astype(np.float32)
    labels = np.rint(v["target"]).astype(np.int64)
    top = x.max(axis=-1, keepdims=True)
    d = np.exp(x - top).sum(axis=-1, keepdims=True, dtype=np.float32)
    eps = np.float32(np.float32(0.1) / np.float32(x.shape[-1])) if eps is None else np.float32(eps)
    grad = np.exp(x - top) / d + (-eps)
    grad[np.arange(x.shape[0]), labels] -= np.float32(1 - 0.1)
    lse = (top + np.log(d)).reshape(-1)
    picked = x[np.arange(x.shape[0]), labels]
    loss = (lse - picked) * np.float32(0.9) + (-eps * x).sum(axis=-1, dtype=np.float32) + np.float32(0.1) * lse
    return {"x": grad, "loss": loss}


def test_cross_entropy_smoothing_term_is_a_float32_value():
    problem = _cross_entropy_problem()
    status, prepared = _verdicts(problem, _liger_cross_entropy_gradient)
    assert status == "passed"
    # where p_j << ls / V the gradient is -ls / V: its float32 value is off by more than
    # the store's roundoff (the case a GPU run failed at 1.41 x the bound without it)
    wide = next(t for t in prepared.trials if t.kind == "wide")
    ref = get_op("cross_entropy").reference(wide.values, problem)["x"]
    err = np.abs(_liger_cross_entropy_gradient(wide.values)["x"] - ref)
    assert (err > 2.0 ** -24 * np.abs(ref)).any()
    off_by_one, _ = _verdicts(problem, lambda v: _liger_cross_entropy_gradient(v, eps=0.1 / (4000 - 1)))
    assert off_by_one == "wrong_result"


def _group_norm_problem(batch=2, groups=4, hidden=4096, per_group=16):
    return Problem("gn", "custom", [
        Buffer("x", "float32", (batch, groups, hidden)), Buffer("w", "float32", (groups * per_group,)),
        Buffer("b", "float32", (groups * per_group,)), Buffer("y", "float32", (batch, groups, hidden), "out"),
        Buffer("mean", "float32", (batch, groups), "out"), Buffer("rstd", "float32", (batch, groups), "out")],
        params={"reference": "liger_reference:group_norm", "reference_source": REFERENCE,
                "reduction_length": hidden, "eps": 1e-5})


def _group_norm_with_mean_off_by(v, shift):
    """GroupNorm's forward with its mean moved by ``shift(x)`` (per group), in float64 (the
    mean's error is all this varies)."""
    x, w, b = v["x"], v["w"], v["b"]
    groups, hidden = x.shape[1], x.shape[2]
    per_group = w.size // groups
    mean = x.mean(axis=-1) + shift(x)
    rstd = 1.0 / np.sqrt((x * x).mean(axis=-1) - x.mean(axis=-1) ** 2 + 1e-5)
    channel = np.arange(groups)[:, None] * per_group + np.arange(hidden)[None, :] // (hidden // per_group)
    return {"y": (x - mean[..., None]) * rstd[..., None] * w[channel][None] + b[channel][None],
            "mean": mean, "rstd": rstd}


def test_group_norm_y_carries_the_error_its_mean_is_allowed():
    problem = _group_norm_problem()
    allowed = 0.5 * accumulation_coefficient(4096, 2.0 ** -24)  # half the mean's own bound, relative to mean |x|
    status, _ = _verdicts(problem, lambda v: _group_norm_with_mean_off_by(v, lambda x: allowed * np.abs(x).mean(-1)))
    assert status == "passed"
    dropped, _ = _verdicts(problem, lambda v: _group_norm_with_mean_off_by(v, lambda x: -x[..., -1] / x.shape[-1]))
    assert dropped == "wrong_result"  # a mean that misses its last column
