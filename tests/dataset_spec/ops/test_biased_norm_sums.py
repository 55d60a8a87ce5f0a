"""Norm bounds on rows whose float32 sums round with one sign (dataset_spec/ops/biased_sums.py).

A serial float32 sum of squares of float16 subnormals (the stress trial's "rows below eps")
or of near-equal float16 values (its "large mean" rows) drifts past the random-walk term
C_ACC sqrt(n) u_acc: the terms leave a few residues below the accumulator's ulp, and every
addition of one of them rounds the same way. Those rows get the worst case; rows of ordinary
data keep the tight bound, where planted errors of one part in n still fail.
"""
import dataclasses

import numpy as np
import pytest

from dataset_spec.model import Buffer, Distribution, Problem
from dataset_spec.ops import biased_sums, get_op
from test_bound_orders import F32, f32, layernorm_kernel, rmsnorm_serial, row_problem, verdict
from verify.trials.inputs import to_storage
from verify.runner import prepare_problem

U32 = 2.0 ** -24


def norm_problem(op, n, rows, x_dtype, out_dtype, kinds, eps):
    bufs = [Buffer("x", x_dtype, (rows, n), init=Distribution("normal", {"mean": 0.0, "std": 1.0})),
            Buffer("w", x_dtype, (n,), init=Distribution("normal", {"mean": 0.0, "std": 1.0}))]
    if op == "layernorm":
        bufs.append(Buffer("b", x_dtype, (n,), init=Distribution("normal", {"mean": 0.0, "std": 1.0})))
    bufs.append(Buffer("out", out_dtype, (rows, n), "out"))
    # these kernels round once, at the store (rmsnorm's default allows Llama's cast as a second)
    return Problem(f"function/{op}/{x_dtype}-{out_dtype}/M{rows}xN{n}", op, bufs,
                   params={"eps": eps, "shape": {"M": rows, "N": n}, "output_roundings": 1},
                   trial_kinds=list(kinds))


def worst_ratio(problem, kernel):
    """max |out - ref| / bound over the problem's trials, and the number of elements past 1."""
    prepared = prepare_problem(problem, problem.problem_id, None)
    assert prepared.refusal == "", prepared.refusal
    spec = prepared.specs[0]
    worst, over = 0.0, 0
    for trial, ref, bound in zip(prepared.trials, prepared.references, spec.bounds):
        with np.errstate(all="ignore"):
            out = to_storage(np.asarray(kernel(trial.values), dtype=np.float64), spec.dtype).astype(np.float64)
            ratio = np.abs(out - ref[spec.name]) / bound
        finite = np.isfinite(ref[spec.name])
        worst = max(worst, float(np.nanmax(np.where(finite, ratio, 0.0))))
        over += int((ratio[finite] > 1).sum())
    return worst, over


def without_biased_rows(monkeypatch):
    """The bound before biased rows were recognised: no row has fewer classes than 0, and
    no class drifts past an infinite share."""
    monkeypatch.setattr(biased_sums, "RESIDUE_CLASSES", 0)
    monkeypatch.setattr(biased_sums, "HEAVY_DRIFT", float("inf"))


# ---- the residue classes ---------------------------------------------------------------------

def test_subnormal_and_near_equal_rows_have_few_residues_and_normal_rows_many():
    rng = np.random.default_rng(1)
    half = lambda v: v.astype(np.float16).astype(np.float64)  # noqa: E731
    subnormal = half(rng.normal(0.0, 1e-5, (4, 4096)))      # multiples of 2^-24: squares of 2^-48
    near_equal = half(4000.0 + rng.normal(0.0, 4.0, (4, 4096)))  # a dozen distinct values
    normal = half(rng.normal(0.0, 1.0, (4, 4096)))
    single = np.zeros((4, 4096))
    single[:, 7] = 3.0                                          # one term: an exact sum
    found = {name: biased_sums.residue_classes(v * v, U32) for name, v in
             [("subnormal", subnormal), ("near_equal", near_equal), ("normal", normal), ("single", single)]}
    counts = {name: f.classes for name, f in found.items()}
    assert np.all((counts["subnormal"] > 0) & (counts["subnormal"] <= 8)), counts
    assert np.all((counts["near_equal"] > 0) & (counts["near_equal"] < 32)), counts
    assert np.all(counts["normal"] == biased_sums.RESIDUE_CLASSES), counts
    assert np.all(counts["single"] == 0), counts
    assert found["subnormal"].biased.all() and found["near_equal"].biased.all()
    assert not found["normal"].biased.any() and not found["single"].biased.any()
    float32_rows = rng.normal(0.0, 1e-5, (4, 4096)).astype(np.float32).astype(np.float64)
    assert not biased_sums.biased_sum_of_squares(float32_rows, U32).any()  # 24-bit values: random residues
    short = rng.normal(0.0, 1.0, (4, 40)).astype(np.float32).astype(np.float64)
    assert np.all(biased_sums.residue_classes(short ** 2, U32).classes == 40)  # few, but all distinct
    assert not biased_sums.biased_sum_of_squares(short, U32).any()


def test_a_few_repeated_large_values_among_small_ones_are_biased():
    """The edge trial's rows: a quarter special values, the repeated +-hi dominating the sum
    of squares; the small normal values below the ulp are absorbed, not counted."""
    rng = np.random.default_rng(3)
    x = rng.normal(0.0, 1.0, (4, 4096)).astype(np.float32).astype(np.float64)
    picks = rng.random((4, 4096)) < 0.02
    x[picks] = np.where(rng.random(picks.sum()) < 0.5, -1.5e17, 1.5e17)
    found = biased_sums.residue_classes(x * x, U32)
    assert np.all(found.classes == 1) and found.biased.all()


def test_a_row_of_few_huge_terms_among_many_small_ones_has_a_heavy_class():
    """The wide trial's layernorm rows: a few elements of the top binades make the sum, and
    beside their mean every small element gives one deviation, -mean: thousands of terms of
    one residue, though the row has 64 classes and more. Ordinary rows have no such class."""
    rng = np.random.default_rng(4)
    x = rng.normal(0.0, 1.0, (4, 4096)).astype(np.float32).astype(np.float64)
    big = 10.0 ** rng.uniform(13, 17, (4, 300))  # the top binades, log-uniform as the wide draw
    x[:, :300] = (big * np.where(rng.random((4, 300)) < 0.5, -1, 1)).astype(np.float32)
    x = rng.permuted(x, axis=-1)
    squares = biased_sums._squares(x, U32, centre=True)
    assert not biased_sums.residue_classes(squares, U32).biased.any()  # many classes: not the old rule
    assert np.all(biased_sums.heavy_class_drift(squares, U32) > biased_sums.HEAVY_DRIFT * 64)
    assert biased_sums.biased_sum_of_squares(x, U32, centre=True).all()
    for dtype in (np.float16, np.float32):
        normal = rng.normal(0.0, 1.0, (4, 4096)).astype(dtype).astype(np.float64)
        for centre in (False, True):
            assert not biased_sums.biased_sum_of_squares(normal, U32, centre).any(), (dtype, centre)


def test_serial_layernorm_on_wide_rows_of_several_draws(monkeypatch):
    """The wide trial draws a float32 row's magnitudes over about 120 binades; a correct
    sequential layernorm at n = 4096 passes on every draw, and the bound without the heavy
    class failed it on most (up to 1.75x)."""
    old = []
    for seed in range(6):
        problem = dataclasses.replace(norm_problem("layernorm", 4096, 9, "float32", "float32", ["wide"], 1e-5),
                                      problem_id=f"wide-layernorm-{seed}")
        ratio, over = worst_ratio(problem, layernorm_kernel("sequential"))
        assert over == 0, (seed, ratio)
        with monkeypatch.context() as patch:
            without_biased_rows(patch)
            old.append(worst_ratio(problem, layernorm_kernel("sequential")))
    assert sum(over > 0 for _, over in old) >= 3, old


def test_the_serial_sum_of_subnormal_squares_really_drifts_past_the_random_walk_term():
    """What the classes predict: the rounding residues all lean one way."""
    x = np.random.default_rng(2).normal(0.0, 1e-5, (64, 4096)).astype(np.float16).astype(F32)
    serial = np.add.accumulate(x * x, axis=-1, dtype=F32)[:, -1].astype(np.float64)
    exact = (x.astype(np.float64) ** 2).sum(axis=-1)
    relative = np.abs(serial - exact) / exact
    assert relative.max() > 2.0 * np.sqrt(4096) * U32  # past C_ACC sqrt(n) u
    assert relative.max() < 4096 * U32                  # inside gamma(n)


# ---- rmsnorm: the TVM schedule's serial sum on the stress trial --------------------------------

def test_serial_rmsnorm_on_a_float16_stress_trial_failed_the_old_bound_and_passes(monkeypatch):
    """The dataset's case: fp16 in and out, 4096 wide, one thread per row summing in order."""
    problem = norm_problem("rmsnorm", 4096, 2048, "float16", "float16", ["stress"], 1e-6)
    ratio, over = worst_ratio(problem, rmsnorm_serial())
    assert over == 0 and ratio <= 1.0, ratio
    with monkeypatch.context() as patch:
        without_biased_rows(patch)
        old_ratio, old_over = worst_ratio(problem, rmsnorm_serial())
    assert old_over > 0 and old_ratio > 1.0, old_ratio


def test_serial_rmsnorm_with_float32_output_fails_the_old_bound_on_every_subnormal_row(monkeypatch):
    problem = norm_problem("rmsnorm", 4096, 36, "float16", "float32", ["stress"], 1e-6)
    assert worst_ratio(problem, rmsnorm_serial())[1] == 0
    with monkeypatch.context() as patch:
        without_biased_rows(patch)
        old_ratio, old_over = worst_ratio(problem, rmsnorm_serial())
    # every element of every subnormal row is over (3 rows of 4096 here); by 1.17x to 1.2x
    # over 36 to 88 rows of the stress trial since its NORM patterns gained the +-inf rows
    assert old_ratio > 1.1 and old_over > 1000, (old_ratio, old_over)


# ---- planted errors of one part in n still fail on ordinary rows --------------------------------

def rmsnorm_planted(mistake):
    """The serial kernel dividing by n - 1, or dropping the last column of the sum."""
    def kernel(v):
        x, w = f32(v["x"]), f32(v["w"])
        n = x.shape[-1]
        squares = np.add.accumulate(x * x, axis=-1, dtype=F32)
        total = squares[:, -2] if mistake == "drop_last" else squares[:, -1]
        divisor = F32(n - 1) if mistake == "n_minus_1" else F32(n)
        rstd = F32(1.0) / np.sqrt(total / divisor + F32(1e-6))
        return x * rstd[:, None] * w[None, :]
    return kernel


@pytest.mark.parametrize("mistake", ["n_minus_1", "drop_last"])
@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_one_part_in_n_errors_still_fail_on_a_normal_trial(dtype, mistake):
    problem = norm_problem("rmsnorm", 4096, 24, dtype, dtype, ["normal"], 1e-6)
    assert worst_ratio(problem, rmsnorm_serial())[1] == 0
    ratio, over = worst_ratio(problem, rmsnorm_planted(mistake))
    assert over > 0, (dtype, mistake, ratio)


def test_ordinary_rows_keep_the_tight_bound():
    """No row of a normal trial is flagged, float16 or float32: P stays 6 |out|."""
    op = get_op("rmsnorm")
    for dtype in ("float16", "float32"):
        problem = row_problem("rmsnorm", 4096, dtype, rows=16, eps=1e-6)
        trial = prepare_problem(problem, "tight", None).trials[0]
        assert trial.kind == "normal"
        ref = op.reference(trial.values, problem)
        pointwise = op.pointwise_scale(trial.values, problem, ref)["out"]
        np.testing.assert_array_equal(pointwise, 6 * np.abs(ref["out"]))


# ---- layernorm: near-equal rows of the stress trial ------------------------------------------

def test_serial_layernorm_on_near_equal_float16_rows(monkeypatch):
    """The variance's serial sum over a large-mean row of float16 values (a dozen distinct
    values) drifts like rmsnorm's; the old bound fails it at float32 output."""
    problem = norm_problem("layernorm", 4096, 36, "float16", "float32", ["stress"], 1e-5)
    kernel = layernorm_kernel("sequential")
    assert worst_ratio(problem, kernel)[1] == 0
    with monkeypatch.context() as patch:
        without_biased_rows(patch)
        old_ratio, old_over = worst_ratio(problem, kernel)
    assert old_over > 0, old_ratio


# ---- numpy and torch give the same pointwise scale ------------------------------------------

@pytest.mark.parametrize("op_name", ["rmsnorm", "layernorm"])
def test_pointwise_scales_take_torch_tensors(op_name):
    """The same numbers from CPU tensors as from numpy arrays (the kind device_prepare passes),
    to float64's rounding: numpy's pairwise row means and torch's sum in different orders, so
    a last-bit difference depends on the draw (the draw of this problem gave 777 of 18432
    scales one ulp apart); a missing or different term is many orders of magnitude more."""
    torch = pytest.importorskip("torch")
    op = get_op(op_name)
    problem = norm_problem(op_name, 1024, 18, "float16", "float16", ["stress"], 1e-5)
    trial = prepare_problem(problem, problem.problem_id, None).trials[0]
    ref = op.reference(trial.values, problem)
    host = op.pointwise_scale(trial.values, problem, ref)["out"]
    tensors = {k: torch.from_numpy(np.ascontiguousarray(v, dtype=np.float64)) for k, v in trial.values.items()}
    device = op.pointwise_scale(tensors, problem, {"out": torch.from_numpy(ref["out"])})["out"]
    assert isinstance(device, torch.Tensor) and device.dtype == torch.float64
    plain = 6 * op.scales(trial.values, problem, ref)["out"]
    assert (host > plain).any()  # some rows carry the worst case
    np.testing.assert_allclose(device.numpy(), host, rtol=1e-13, atol=0)
