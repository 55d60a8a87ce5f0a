"""The float64 references written for Liger-Kernel's backward kernels (examples/liger) agree
with torch's autograd of each forward's definition, at small sizes on CPU: a backward
reference is the derivative of the function, not a copy of the kernel's algorithm. The
per-program dW partial sums add up to the full weight gradient, and each program sums the
rows the problem's split gives it."""
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

torch = pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples" / "liger"))
import liger_norm_backward as norms  # noqa: E402
import liger_reference as pointwise  # noqa: E402

RNG = np.random.default_rng(7)


def _problem(buffers=(), **params):
    return SimpleNamespace(params=params, buffers=[SimpleNamespace(name=n, shape=s) for n, s in buffers])


def _grads(forward, upstream, *inputs):
    tensors = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in inputs]
    forward(*tensors).backward(torch.tensor(upstream))
    return [t.grad.numpy() for t in tensors]


def test_rms_norm_backward_is_the_gradient_and_its_programs_split_the_rows():
    x, dy, w, ds = RNG.normal(size=(10, 16)), RNG.normal(size=(10, 16)), RNG.normal(size=16), RNG.normal(size=(10, 16))
    problem = _problem(eps=1e-6, offset=1.0, programs=4, rows_per_program=3)
    rstd = norms.rms_norm_rstd({"x": x}, problem)
    got = norms.rms_norm_backward({"x": x, "dy": dy, "w": w, "rstd": rstd, "ds": ds}, problem)
    dx, dw = _grads(lambda x, w: x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6) * (w + 1.0), dy, x, w)
    assert np.allclose(got["dx"], dx + ds) and np.allclose(got["dw"].sum(0), dw)
    assert np.allclose(got["dw"][3], (dy * x * rstd[:, None])[9])  # rows 9.. belong to program 3
    strided = norms.per_program(np.arange(10.0)[:, None], _problem(programs=2, row_block=2))
    assert strided[:, 0].tolist() == [0 + 1 + 4 + 5 + 8 + 9, 2 + 3 + 6 + 7]


def test_layer_norm_backward_is_the_gradient():
    x, dy, w, b = RNG.normal(size=(6, 32)), RNG.normal(size=(6, 32)), RNG.normal(size=32), RNG.normal(size=32)
    problem = _problem(eps=1e-5, programs=2, rows_per_program=3)
    inputs = {"x": x, "dy": dy, "w": w, "mean": norms.layer_norm_mean({"x": x}, problem),
              "rstd": norms.layer_norm_rstd({"x": x}, problem)}
    got = norms.layer_norm_backward(inputs, problem)
    dx, dw, db = _grads(lambda x, w, b: torch.nn.functional.layer_norm(x, (32,), w, b, 1e-5), dy, x, w, b)
    assert np.allclose(got["dx"], dx) and np.allclose(got["dw"].sum(0), dw) and np.allclose(got["db"].sum(0), db)


def test_group_norm_backward_is_the_gradient():
    batch, groups, per_group, hidden = 2, 3, 2, 5
    x = RNG.normal(size=(batch, groups, per_group * hidden))
    dy, w, b = RNG.normal(size=x.shape), RNG.normal(size=groups * per_group), RNG.normal(size=groups * per_group)
    problem = _problem([("dx", x.shape)], eps=1e-5)
    inputs = {"x": x, "dy": dy, "w": w, "mean": norms.layer_norm_mean({"x": x}, problem),
              "rstd": norms.layer_norm_rstd({"x": x}, problem)}
    got = norms.group_norm_backward(inputs, problem)

    def forward(x, w, b):
        return torch.nn.functional.group_norm(x.reshape(batch, groups * per_group, hidden), groups, w, b, 1e-5)
    dx, dw, db = _grads(forward, dy.reshape(batch, groups * per_group, hidden), x, w, b)
    assert np.allclose(got["dx"], dx) and np.allclose(got["dw"], dw) and np.allclose(got["db"], db)


def test_poly_norm_backward_is_the_gradient():
    x, dy, w, b = RNG.normal(size=(5, 24)), RNG.normal(size=(5, 24)), RNG.normal(size=3), RNG.normal(size=1)
    problem = _problem(eps=1e-6, programs=2, rows_per_program=3)

    def forward(x, w, b):
        def norm(u):
            return u * torch.rsqrt((u * u).mean(-1, keepdim=True) + 1e-6)
        return w[0] * norm(x ** 3) + w[1] * norm(x ** 2) + w[2] * norm(x) + b
    y = forward(*(torch.tensor(a) for a in (x, w, b))).numpy()
    assert np.allclose(norms.poly_norm({"x": x, "w": w, "b": b}, problem)["y"], y)
    got = norms.poly_norm_backward({"x": x, "dy": dy, "w": w, "rstd": norms.poly_norm_rstd({"x": x}, problem)}, problem)
    dx, dw, db = _grads(forward, dy, x, w, b)
    assert np.allclose(got["dx"], dx) and np.allclose(got["dw"].sum(0), dw) and np.allclose(got["db"].sum(), db)


def test_dyt_backward_is_the_gradient():
    x, dy = RNG.normal(size=(6, 1024)), RNG.normal(size=(6, 1024))
    alpha, gamma, beta = np.array([0.7]), RNG.normal(size=1024), RNG.normal(size=1024)
    problem = _problem(programs=4, row_block=1, block_n=512)
    got = norms.dyt_backward({"x": x, "dy": dy, "alpha": alpha, "gamma": gamma}, problem)
    dx, da, dg, db = _grads(lambda x, a, g, b: g * torch.tanh(a * x) + b, dy, x, alpha, gamma, beta)
    assert np.allclose(got["dx"], dx) and np.allclose(got["dg"].sum(0), dg) and np.allclose(got["db"].sum(0), db)
    assert got["da"].shape == (4, 2) and np.allclose(got["da"].sum(), da)


def test_sparsemax_and_its_backward():
    x = RNG.normal(size=(8, 12)) * 2
    y = pointwise.sparsemax({"x": x}, None)["y"]
    assert np.allclose(y.sum(-1), 1.0) and (y >= 0).all() and (y == 0).any()
    # the Euclidean projection onto the simplex: no feasible point is closer to x
    for _ in range(200):
        other = RNG.dirichlet(np.ones(12), size=8)
        assert (((x - y) ** 2).sum(-1) <= ((x - other) ** 2).sum(-1) + 1e-12).all()
    assert np.array_equal(pointwise.sparsemax_sorted({"x": x}, None), -np.sort(-x, -1))
    dy = RNG.normal(size=x.shape)
    dx = pointwise.sparsemax_backward({"y": y, "dy": dy}, None)["dx"]
    eps = 1e-6  # the Jacobian-vector product, by central differences of the forward
    probe = RNG.normal(size=x.shape)
    plus = pointwise.sparsemax({"x": x + eps * probe}, None)["y"]
    minus = pointwise.sparsemax({"x": x - eps * probe}, None)["y"]
    assert np.allclose(((plus - minus) / (2 * eps) * dy).sum(-1), (dx * probe).sum(-1), atol=1e-6)


def test_rotations_are_undone_by_their_backward():
    q, k = RNG.normal(size=(1, 4, 3, 8)), RNG.normal(size=(1, 4, 1, 8))
    angle = RNG.uniform(0, 3, size=(3, 1, 4, 4))
    tables = {"cos": np.concatenate([np.cos(angle)] * 2, -1), "sin": np.concatenate([np.sin(angle)] * 2, -1)}
    forward = pointwise.qwen2vl_mrope({"q": q, "k": k, **tables}, _problem(mrope_section=[1, 2, 1]))
    back = pointwise.qwen2vl_mrope({**forward, **tables}, _problem(mrope_section=[1, 2, 1], inverse=True))
    assert np.allclose(back["q"], q) and np.allclose(back["k"], k) and not np.allclose(forward["q"], q)
    freqs = np.stack([np.cos(angle[0, 0]), np.sin(angle[0, 0])], -1)
    turned = pointwise.llama4_rope({"q": q, "k": k, "freqs": freqs}, _problem(imag_sign=1.0))
    again = pointwise.llama4_rope({**turned, "freqs": freqs}, _problem(imag_sign=-1.0))
    assert np.allclose(again["q"], q) and np.allclose(np.linalg.norm(turned["q"]), np.linalg.norm(q))
