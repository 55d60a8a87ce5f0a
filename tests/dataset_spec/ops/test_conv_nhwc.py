"""The channels-last convolution ops (dataset_spec/ops/conv_nhwc.py): references against a
direct loop over every output element and tap, for fprop, dgrad and wgrad in 2-D and 3-D
with stride, padding, dilation and groups; the error bound passes a correctly rounded
output and catches a 1% error."""
import itertools

import numpy as np
import pytest

from dataset_spec.model import Problem, SpecError
from dataset_spec.ops import get_op
from dataset_spec.ops.conv_nhwc import conv_buffers, conv_shapes, conv_reduction_length
from helpers import judge


def direct_fprop(x, w, stride, pad, dil, groups):
    """y[n, o, k] by the definition, one output element and one tap at a time."""
    n, *spatial, c = x.shape
    k, *taps, cg = w.shape
    kg = k // groups
    out = [(h + 2 * p - d * (t - 1) - 1) // s + 1 for h, t, s, p, d in zip(spatial, taps, stride, pad, dil)]
    y = np.zeros((n, *out, k))
    for b, *o, kk in itertools.product(range(n), *(range(e) for e in out), range(k)):
        grp = kk // kg
        total = 0.0
        for tap in itertools.product(*(range(t) for t in taps)):
            pos = [oi * s - p + ti * d for oi, s, p, ti, d in zip(o, stride, pad, tap, dil)]
            if all(0 <= q < h for q, h in zip(pos, spatial)):
                for cc in range(cg):
                    total += x[(b, *pos, grp * cg + cc)] * w[(kk, *tap, cc)]
        y[(b, *o, kk)] = total
    return y


def direct_dgrad(dy, w, spatial, stride, pad, dil, groups):
    n, *out, k = dy.shape
    _, *taps, cg = w.shape
    c, kg = cg * groups, k // groups
    dx = np.zeros((n, *spatial, c))
    for b, *o, kk in itertools.product(range(n), *(range(e) for e in out), range(k)):
        grp = kk // kg
        for tap in itertools.product(*(range(t) for t in taps)):
            pos = [oi * s - p + ti * d for oi, s, p, ti, d in zip(o, stride, pad, tap, dil)]
            if all(0 <= q < h for q, h in zip(pos, spatial)):
                for cc in range(cg):
                    dx[(b, *pos, grp * cg + cc)] += dy[(b, *o, kk)] * w[(kk, *tap, cc)]
    return dx


def direct_wgrad(dy, x, taps, stride, pad, dil, groups):
    n, *out, k = dy.shape
    _, *spatial, c = x.shape
    cg, kg = c // groups, k // groups
    dw = np.zeros((k, *taps, cg))
    for b, *o, kk in itertools.product(range(n), *(range(e) for e in out), range(k)):
        grp = kk // kg
        for tap in itertools.product(*(range(t) for t in taps)):
            pos = [oi * s - p + ti * d for oi, s, p, ti, d in zip(o, stride, pad, tap, dil)]
            if all(0 <= q < h for q, h in zip(pos, spatial)):
                for cc in range(cg):
                    dw[(kk, *tap, cc)] += dy[(b, *o, kk)] * x[(b, *pos, grp * cg + cc)]
    return dw


CASES = [  # spatial, taps, stride, padding, dilation, groups
    ((5, 6), (3, 3), (1, 1), (1, 1), (1, 1), 1),
    ((7, 6), (3, 2), (2, 1), (1, 0), (1, 1), 1),
    ((9, 8), (3, 3), (2, 2), (2, 1), (2, 1), 1),
    ((6, 6), (1, 1), (2, 2), (0, 0), (1, 1), 2),
    ((6, 7), (3, 3), (1, 2), (1, 1), (1, 2), 3),
    ((8, 8), (2, 2), (2, 2), (0, 0), (1, 1), 1),   # patch embedding: stride = filter size
    ((4, 5, 5), (3, 2, 3), (1, 2, 1), (1, 0, 1), (1, 1, 2), 1),
    ((5, 4, 4), (2, 3, 3), (2, 1, 1), (0, 1, 1), (1, 1, 1), 2),
]


def make(kind, spatial, taps, stride, pad, dil, groups, dtype="float32", n=2, c=6, k=6, **params):
    shapes = conv_shapes(n, spatial, c, k, taps, stride, pad, dil, groups)
    dims = len(spatial)
    buffers = conv_buffers(kind, shapes, dtype, dtype, dtype, "float32" if params.get("beta") else "")
    return Problem(f"conv{dims}d_{kind}", f"conv{dims}d_{kind}", buffers,
                   params={"stride": list(stride), "padding": list(pad), "dilation": list(dil),
                           "groups": groups, **params})


@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
@pytest.mark.parametrize("kind", ["fprop", "dgrad", "wgrad"])
def test_reference_matches_the_direct_loop(kind, case):
    spatial, taps, stride, pad, dil, groups = case
    problem = make(kind, spatial, taps, stride, pad, dil, groups)
    rng = np.random.default_rng(7)
    inputs = {b.name: rng.standard_normal(b.shape) for b in problem.buffers if b.role == "in"}
    got = get_op(problem.op).reference(inputs, problem)
    if kind == "fprop":
        want = direct_fprop(inputs["x"], inputs["w"], stride, pad, dil, groups)
    elif kind == "dgrad":
        want = direct_dgrad(inputs["dy"], inputs["w"], spatial, stride, pad, dil, groups)
    else:
        want = direct_wgrad(inputs["dy"], inputs["x"], taps, stride, pad, dil, groups)
    (out,) = got.values()
    assert out.shape == want.shape
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)


def test_dgrad_and_wgrad_are_the_adjoints_of_fprop():
    """<fprop(x, w), dy> = <x, dgrad(dy, w)> = <w, wgrad(dy, x)>: the three kinds agree."""
    spatial, taps, stride, pad, dil, groups = CASES[4]
    rng = np.random.default_rng(3)
    fprop = make("fprop", spatial, taps, stride, pad, dil, groups)
    x, w = (rng.standard_normal(fprop.buffer(n).shape) for n in ("x", "w"))
    y = get_op("conv2d_fprop").reference({"x": x, "w": w}, fprop)["y"]
    dy = rng.standard_normal(y.shape)
    dx = get_op("conv2d_dgrad").reference({"dy": dy, "w": w}, make("dgrad", spatial, taps, stride, pad, dil, groups))["dx"]
    dw = get_op("conv2d_wgrad").reference({"dy": dy, "x": x}, make("wgrad", spatial, taps, stride, pad, dil, groups))["dw"]
    assert np.isclose((y * dy).sum(), (x * dx).sum()) and np.isclose((y * dy).sum(), (w * dw).sum())


def test_alpha_beta_epilogue_and_reduction_lengths():
    problem = make("fprop", (5, 6), (3, 3), (1, 1), (1, 1), (1, 1), 2, alpha=2.0, beta=0.5)
    rng = np.random.default_rng(1)
    inputs = {b.name: rng.standard_normal(b.shape) for b in problem.buffers if b.role == "in"}
    plain = get_op("conv2d_fprop").reference({"x": inputs["x"], "w": inputs["w"]},
                                              make("fprop", (5, 6), (3, 3), (1, 1), (1, 1), (1, 1), 2))["y"]
    np.testing.assert_allclose(get_op("conv2d_fprop").reference(inputs, problem)["y"], 2 * plain + 0.5 * inputs["C"])
    assert conv_reduction_length(problem) == 3 * 3 * 3                 # C/groups R S
    assert conv_reduction_length(make("dgrad", (5, 6), (3, 3), (1, 1), (1, 1), (1, 1), 2)) == 3 * 3 * 3
    assert conv_reduction_length(make("wgrad", (5, 6), (3, 3), (1, 1), (1, 1), (1, 1), 1)) == 2 * 5 * 6


def test_shapes_that_disagree_are_one_line_errors():
    problem = make("fprop", (5, 6), (3, 3), (1, 1), (1, 1), (1, 1), 1)
    wrong = Problem("p", "conv2d_fprop", problem.buffers, params={**problem.params, "stride": [2, 2]})
    with pytest.raises(SpecError, match="output spatial should be"):
        get_op("conv2d_fprop").reference({"x": np.zeros((2, 5, 6, 6)), "w": np.zeros((6, 3, 3, 6))}, wrong)
    with pytest.raises(SpecError, match="no output position"):
        conv_shapes(1, (2, 2), 4, 4, (5, 5), (1, 1), (0, 0), (1, 1))


def rounded_float32_kernel(problem):
    """A correct kernel at its best: the exact conv of the stored inputs, rounded once to
    float32 (the store then rounds to the output dtype)."""
    op = get_op(problem.op)
    def kernel(values, ref):
        f32 = {k: np.asarray(v, dtype=np.float32) for k, v in values.items()}
        with np.errstate(all="ignore"):
            exact = op.reference({k: v.astype(np.float64) for k, v in f32.items()}, problem)
        (out,) = exact.values()
        return np.asarray(out, dtype=np.float32).astype(np.float64)
    return kernel


JUDGED = [(kind, dims, dtype) for kind in ("fprop", "dgrad", "wgrad") for dims in (2, 3)
          for dtype in ("float32", "float16", "bfloat16")]


@pytest.mark.parametrize("kind,dims,dtype", JUDGED)
def test_rounded_output_passes_and_one_percent_error_is_caught(kind, dims, dtype):
    case = CASES[2] if dims == 2 else CASES[6]
    problem = make(kind, *case, dtype=dtype, c=8, k=8, accumulator="float32")
    verdict, _ = judge(problem, rounded_float32_kernel(problem))
    assert verdict.status == "passed", verdict.message
    verdict, prepared = judge(problem, lambda values, ref: ref * 1.01)
    assert verdict.status == "wrong_result", f"{kind} {dims}-D {dtype}: a 1% error passed"
    assert prepared.catches_rel_err < 0.01


def test_one_percent_error_in_one_element_is_caught_with_beta():
    problem = make("fprop", (6, 6), (3, 3), (1, 1), (1, 1), (1, 1), 1, c=8, k=8, alpha=1.5, beta=0.5)
    def planted(values, ref):
        out = np.array(ref, dtype=np.float64)
        flat = out.reshape(-1)
        i = int(np.argmax(np.abs(flat)))
        flat[i] *= 1.01
        return out
    verdict, _ = judge(problem, planted)
    assert verdict.status == "wrong_result"
